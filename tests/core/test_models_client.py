"""``openenv.core.models_client``: an upstream-style client class made from an env's models."""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.models_client import ModelsEnvClient, models_client
from tests._envs import MODELS, TAction, TObservation, TState


def test_makes_a_named_subclass_with_the_models() -> None:
    cls = models_client(MODELS, "TestEnv")
    assert cls.__name__ == "TestEnv"
    assert issubclass(cls, ModelsEnvClient)
    assert issubclass(cls, EnvClient)
    assert cls.models is MODELS
    assert models_client(MODELS, "Other") is not cls


def test_payload_dumps_only_the_fields_set() -> None:
    env = models_client(MODELS)(base_url="http://127.0.0.1:1")
    assert env._step_payload(TAction(message="hi")) == {"message": "hi"}
    assert env._step_payload({"message": "raw"}) == {"message": "raw"}


def test_parse_result_carries_the_signals_into_the_observation() -> None:
    env = models_client(MODELS)(base_url="http://127.0.0.1:1")
    payload = {"observation": {"message": "m", "step": 3}, "reward": 0.5, "done": True, "truncated": True}
    result = env._parse_result(payload)
    assert isinstance(result, StepResult)
    assert isinstance(result.observation, TObservation)
    assert (result.observation.message, result.observation.step) == ("m", 3)
    assert (result.observation.reward, result.observation.done) == (0.5, True)
    assert (result.reward, result.done, result.truncated) == (0.5, True, True)


def test_episode_against_a_live_server(server: Any) -> None:
    with models_client(MODELS, "TestEnv")(base_url=server.url).sync() as env:
        first = env.reset(seed=3)
        assert isinstance(first.observation, TObservation)
        assert first.observation.seed == 3
        result = env.step(TAction(message="hello"))
        assert (result.observation.message, result.observation.step, result.reward) == ("hello", 1, 1.0)
        state = env.state()
        assert isinstance(state, TState)
        assert state.step_count == 1
