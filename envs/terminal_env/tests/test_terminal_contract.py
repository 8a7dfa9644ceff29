"""The terminal env's wire models take JSON types only, as their JSON Schema says
(``tests/server/test_schemathesis.py`` fuzzes the served env)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from terminal_env import RunAction, TerminalAction, TerminalResetOptions, WriteFileAction


@pytest.mark.parametrize(
    "wire",
    [
        {"type": "write_file", "path": "a", "content": "", "mode": False},
        {"type": "write_file", "path": "a", "content": "", "mode": "420"},
        {"type": "send_keys", "keys": "q", "enter": 1},
        {"type": "run", "command": "ls", "timeout_s": True},
    ],
)
def test_actions_take_json_types_only(wire: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        TerminalAction.model_validate(wire)


def test_json_numbers_still_parse() -> None:
    wire = '{"type": "write_file", "path": "a", "content": "", "mode": 420.0}'
    assert TerminalAction.model_validate_json(wire).root == WriteFileAction(path="a", content="", mode=420)
    run = TerminalAction.model_validate({"command": "ls", "timeout_s": 2}).root
    assert run == RunAction(command="ls", timeout_s=2.0)


@pytest.mark.parametrize(
    "bad", [{"free_shell": 0}, {"free_shell": "yes"}, {"max_steps": True}, {"index": True}]
)
def test_reset_options_take_json_types_only(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        TerminalResetOptions.model_validate(bad)
    assert TerminalResetOptions.model_validate({"free_shell": True, "max_steps": 4.0}).max_steps == 4


@pytest.mark.parametrize("content", ["ü", "abc", "a===", "Zm9v\n", "Zm9v!"])
def test_base64_content_is_checked_as_the_schema_states(content: str) -> None:
    wire = {"type": "write_file", "path": "a", "content": content, "encoding": "base64"}
    with pytest.raises(ValidationError, match="base64"):
        TerminalAction.model_validate(wire)
    assert TerminalAction.model_validate({**wire, "encoding": "utf-8"}).root.content == content  # type: ignore[union-attr]
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the 'authoring' extra")
    schema = WriteFileAction.model_json_schema()
    assert not jsonschema.Draft202012Validator(schema).is_valid(wire)
    assert jsonschema.Draft202012Validator(schema).is_valid({**wire, "content": "Zm9vYg=="})
    assert WriteFileAction.model_validate({**wire, "content": "Zm9vYg=="}).content == "Zm9vYg=="
