"""``openenv.core.client_types.StepResult``: upstream's constructor and dataclass fields
on our ``StepResult``."""

from __future__ import annotations

import dataclasses
from typing import Any

from openenv import StepResult as OurStepResult
from openenv.core.client_types import StepResult


def test_upstream_constructor_and_reassignable_fields() -> None:
    result: StepResult[dict[str, Any]] = StepResult({"x": 1}, 0.5, True)
    assert isinstance(result, OurStepResult)
    assert (result.reward, result.done, result.terminated, result.truncated) == (0.5, True, True, False)
    result.reward = 2.0
    result.done = False
    assert (result.reward, result.done) == (2.0, False)


def test_upstreams_dataclass_fields_in_its_order() -> None:
    assert dataclasses.is_dataclass(StepResult)
    assert [f.name for f in dataclasses.fields(StepResult)] == ["observation", "reward", "done", "metadata"]
    result = StepResult({"x": 1}, 1.0, False, {"m": 1})
    expected = {"observation": {"x": 1}, "reward": 1.0, "done": False, "metadata": {"m": 1}}
    assert dataclasses.asdict(result) == expected


@dataclasses.dataclass
class InfoStepResult(StepResult[dict[str, Any]]):
    """As a PyPI env (openenv-dipg-safety) writes its result type."""

    info: dict[str, Any] = dataclasses.field(default_factory=dict)


def test_a_dataclass_subclass_gets_upstreams_constructor_plus_its_field() -> None:
    result = InfoStepResult(observation={"q": "?"}, reward=-1.0, done=True, info={"safe": False})
    assert isinstance(result, OurStepResult)
    assert (result.observation, result.reward, result.done) == ({"q": "?"}, -1.0, True)
    assert result.info == {"safe": False}
    assert result.terminated
    plain = InfoStepResult({"q": "!"})
    assert (plain.reward, plain.done, plain.info) == (None, False, {})
    assert plain == InfoStepResult({"q": "!"})
    assert plain != result
