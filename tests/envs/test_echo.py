"""The echo env: behaviour as plain Python, then over a real server with both clients."""

from __future__ import annotations

import httpx
import pytest
from echo_env import MODELS, EchoAction, EchoEnv, EchoObservation, EchoState
from pydantic import ValidationError

from openenv import AsyncEnvClient, EnvClient, Execution, ExecutionError, ValidationFailed
from openenv._models import EnvModels


def test_models():
    assert EnvModels(EchoAction, EchoObservation, EchoState) == MODELS
    assert (EchoEnv.action_model, EchoEnv.observation_model, EchoEnv.state_model) == (
        EchoAction, EchoObservation, EchoState,
    )
    assert EchoEnv.execution is Execution.INLINE


def test_metadata():
    meta = EchoEnv.metadata()
    assert (meta.name, meta.version) == ("echo_env", "0.1.0")
    assert meta.description == "Echoes each message back; reward is 0.1 per character."


def test_reset_starts_an_episode():
    env = EchoEnv()
    obs = env.reset(episode_id="ep")
    assert obs.echoed_message == "Echo environment ready!"
    assert obs.reward == 0.0
    assert obs.done is False
    assert env.state() == EchoState(episode_id="ep", step_count=0, total_chars=0)


def test_reset_without_episode_id_makes_one():
    env = EchoEnv()
    env.reset()
    first = env.state().episode_id
    env.reset()
    assert first
    assert env.state().episode_id != first


def test_step_echoes_and_rewards_per_character():
    env = EchoEnv()
    env.reset()
    obs = env.step(EchoAction(message="hello"))
    assert (obs.echoed_message, obs.message_length) == ("hello", 5)
    assert obs.reward == pytest.approx(0.5)
    assert (obs.done, obs.truncated) == (False, False)
    env.step(EchoAction(message="ab"))
    assert (env.state().step_count, env.state().total_chars) == (2, 7)


def test_exit_terminates():
    env = EchoEnv()
    env.reset()
    obs = env.step(EchoAction(message="exit"))
    assert (obs.done, obs.truncated) == (True, False)


def test_max_steps_truncates():
    env = EchoEnv()
    env.reset(options={"max_steps": 2})
    assert env.step(EchoAction(message="a")).done is False
    last = env.step(EchoAction(message="b"))
    assert (last.done, last.truncated) == (True, True)


@pytest.mark.parametrize("bad", [0, -1, "3", 1.5])
def test_bad_max_steps_is_rejected(bad):
    with pytest.raises(ValueError, match="max_steps"):
        EchoEnv().reset(options={"max_steps": bad})


def test_state_is_a_copy():
    env = EchoEnv()
    env.reset()
    state = env.state()
    state.step_count = 99
    assert env.state().step_count == 0


def test_message_length_limit():
    EchoAction(message="x" * 65536)
    with pytest.raises(ValidationError):
        EchoAction(message="x" * 65537)


# --- served ------------------------------------------------------------------------------------------


@pytest.fixture
def echo(serve):
    return serve(EchoEnv)


def test_episode_over_the_sync_client(echo):
    with EnvClient(echo.url, MODELS) as env:
        first = env.reset(max_steps=2)
        a = env.step(EchoAction(message="hi"))
        b = env.step(EchoAction(message="there"))
        state = env.state()
        with pytest.raises(ValidationFailed):
            env.step({"message": "x" * 65537})
    assert first.observation.echoed_message == "Echo environment ready!"
    assert (a.observation.echoed_message, a.reward, a.done) == ("hi", pytest.approx(0.2), False)
    assert (b.terminated, b.truncated, b.done) == (False, True, True)
    assert (state.step_count, state.total_chars) == (2, 7)


async def test_episode_over_the_async_client(echo):
    async with AsyncEnvClient(echo.url, MODELS, binary=True) as env:
        await env.reset()
        result = await env.step(EchoAction(message="exit"))
    assert (result.terminated, result.truncated) == (True, False)


def test_bad_reset_option_is_an_execution_error(echo):
    with EnvClient(echo.url, MODELS) as env:
        with pytest.raises(ExecutionError, match="max_steps") as info:
            env.reset(max_steps=0)
        assert info.value.details["exception"] == "ValueError"
        assert env.reset().observation.echoed_message  # still usable


def test_schema_and_metadata_over_http(echo):
    with httpx.Client(base_url=echo.url, timeout=5) as http:
        schema = http.get("/schema").json()
        meta = http.get("/metadata").json()
        step = http.post("/step", json={"action": {"message": "abc"}}).json()
    assert schema["action"] == EchoAction.model_json_schema()
    assert schema["observation"] == EchoObservation.model_json_schema()
    assert schema["state"] == EchoState.model_json_schema()
    assert meta["name"] == "echo_env"
    assert step == {
        "observation": {"metadata": {}, "echoed_message": "abc", "message_length": 3},
        "reward": pytest.approx(0.3),
        "done": False,
        "metadata": None,
    }

