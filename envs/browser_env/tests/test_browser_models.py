"""The browser env's models and light imports: no browser needed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from browser_env import (
    BrowserAction,
    BrowserObservation,
    BrowserResetOptions,
    ClickAction,
    FillAction,
    GotoAction,
    NoopAction,
    PressAction,
)
from pydantic import ValidationError


def test_a_client_dump_keeps_the_tag() -> None:
    # The client sends model_dump(exclude_unset=True): the defaulted tag must survive it.
    assert ClickAction(id=3).model_dump(exclude_unset=True) == {"type": "click", "id": 3}
    assert NoopAction().model_dump(exclude_unset=True, mode="json") == {"type": "noop"}


@pytest.mark.parametrize(
    ("wire", "kind"),
    [
        ({"type": "click", "id": 3}, ClickAction),
        ({"type": "fill", "id": 4, "text": "hi"}, FillAction),
        ({"type": "press", "key": "Enter"}, PressAction),
        ({"type": "goto", "url": "http://127.0.0.1/x"}, GotoAction),
        ({"type": "noop"}, NoopAction),
    ],
)
def test_the_server_parses_the_tagged_union(wire: dict[str, object], kind: type) -> None:
    assert isinstance(BrowserAction.model_validate(wire).root, kind)


@pytest.mark.parametrize(
    "wire",
    [
        {"type": "click"},  # no id
        {"type": "click", "id": 0},  # ids start at 1
        {"type": "drag", "id": 1},  # no such action
        {"type": "click", "id": 1, "x": 5},  # unknown field
        {"type": "noop", "wait_ms": 60_000},  # over the cap
    ],
)
def test_bad_actions_fail_validation(wire: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        BrowserAction.model_validate(wire)


@pytest.mark.parametrize(
    "wire",
    [{"type": "click", "id": True}, {"type": "scroll", "dy": "5"}, {"type": "noop", "wait_ms": False}],
)
def test_actions_take_json_types_only(wire: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        BrowserAction.model_validate(wire)
    assert BrowserAction.model_validate({"type": "click", "id": 3.0}).root == ClickAction(id=3)


@pytest.mark.parametrize("bad", [{"screenshot": 0}, {"max_steps": True}, {"time_limit_s": True}])
def test_reset_options_take_json_types_only(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        BrowserResetOptions.model_validate(bad)


def test_the_schema_requires_the_tag_the_server_parses_by() -> None:
    for member in BrowserAction.model_json_schema()["$defs"].values():
        assert "type" in member["required"]
    with pytest.raises(ValidationError):
        BrowserAction.model_validate({"url": "http://x"})  # schema-invalid, and refused
    assert GotoAction(url="http://x").type == "goto"  # the Python model still defaults it


def test_screenshot_is_png_bytes_base64_in_json() -> None:
    obs = BrowserObservation(screenshot=b"\x89PNG")
    assert '"screenshot":"iVBORw=="' in obs.model_dump_json()
    assert BrowserObservation.model_validate_json(obs.model_dump_json()).screenshot == b"\x89PNG"


def test_reset_options_extend_task_options() -> None:
    from openenv.tasks import TaskOptions

    assert issubclass(BrowserResetOptions, TaskOptions)
    with pytest.raises(ValidationError):
        BrowserResetOptions(max_steps=0)


def test_models_import_without_playwright() -> None:
    code = "import sys, browser_env; browser_env.MODELS; assert 'playwright' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
