"""``openenv._models``: the base models, ``EnvModels`` and ``StepResult``."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from openenv import (
    GENERIC_MODELS,
    Action,
    EnvironmentMetadata,
    EnvModels,
    Observation,
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


def test_action_metadata_is_not_shared_between_instances():
    a, b = Action(), Action()
    a.metadata["k"] = 1
    assert b.metadata == {}


def test_observation_defaults():
    obs = Observation()
    assert (obs.done, obs.truncated, obs.reward, obs.metadata) == (False, False, None, {})
    assert list(Observation.model_fields) == ["done", "truncated", "reward", "metadata"]


def test_observation_rejects_unknown_fields():
    with pytest.raises(ValidationError):
        Observation(extra=1)


@pytest.mark.parametrize("reward", [True, 3, 0.5, None])
def test_observation_reward_types(reward):
    assert Observation(reward=reward).reward == reward


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


def test_env_models_is_frozen():
    models = EnvModels(TAction, TObservation, TState)
    assert (models.action, models.observation, models.state) == (TAction, TObservation, TState)
    with pytest.raises(dataclasses.FrozenInstanceError):
        models.action = Action  # type: ignore[misc]


def test_generic_models_are_dicts():
    assert (GENERIC_MODELS.action, GENERIC_MODELS.observation, GENERIC_MODELS.state) == (
        dict, dict, dict,
    )


@pytest.mark.parametrize(
    ("terminated", "truncated", "done"),
    [(False, False, False), (True, False, True), (False, True, True), (True, True, True)],
)
def test_step_result_done_is_terminated_or_truncated(terminated, truncated, done):
    result = StepResult({"x": 1}, 1.0, terminated, truncated)
    assert result.done is done


def test_step_result_defaults():
    result = StepResult("obs")
    assert (result.reward, result.terminated, result.truncated, result.metadata) == (
        None, False, False, {},
    )
    assert StepResult("o").metadata is not StepResult("o").metadata
