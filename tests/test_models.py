"""``openenv._models``: the base models, ``EnvModels`` and ``StepResult``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from openenv import (
    Action,
    EnvironmentMetadata,
    State,
    StepResult,
)

from ._envs import TAction, TObservation, TState


def test_action_rejects_unknown_fields_and_defaults_metadata():
    assert Action().metadata == {}
    with pytest.raises(ValidationError):
        Action(bogus=1)
    with pytest.raises(ValidationError):
        TAction.model_validate({"message": "x", "bogus": 1})


def test_observation_bytes_travel_as_base64_in_json():
    obs = TObservation(blob=b"\x00\x01\xfe\xff")
    text = obs.model_dump_json()
    assert '"blob":"AAH-_w=="' in text
    assert TObservation.model_validate_json(text).blob == b"\x00\x01\xfe\xff"


def test_state_allows_extra_fields_and_bounds_step_count():
    state = State(episode_id="e", step_count=2, custom="x")
    assert state.model_extra == {"custom": "x"}
    assert state.model_dump() == {"episode_id": "e", "step_count": 2, "custom": "x"}
    with pytest.raises(ValidationError):
        State(step_count=-1)
    assert TState().instance == 0


def test_environment_metadata_fields_are_upstreams():
    assert list(EnvironmentMetadata.model_fields) == [
        "name", "description", "readme_content", "version", "author", "documentation_url",
    ]
    meta = EnvironmentMetadata(name="n", description="d")
    assert meta.model_dump() == {
        "name": "n", "description": "d", "readme_content": None, "version": None,
        "author": None, "documentation_url": None,
    }
    with pytest.raises(ValidationError):
        EnvironmentMetadata(name="n")


@pytest.mark.parametrize(
    ("terminated", "truncated", "done"),
    [(False, False, False), (True, False, True), (False, True, True), (True, True, True)],
)
def test_step_result_done_is_terminated_or_truncated(terminated, truncated, done):
    result = StepResult({"x": 1}, 1.0, terminated, truncated)
    assert result.done is done
