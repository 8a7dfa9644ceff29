"""``openenv.core.env_client.EnvClient``: upstream's subclass-and-hooks client over ours."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv import ConnectError, ExecutionError
from openenv import StepResult as OurStepResult
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from tests._envs import TAction, TObservation, TState

from ._upstream_style import TEnv


def test_hooks_are_abstract() -> None:
    with pytest.raises(TypeError):
        EnvClient(base_url="http://127.0.0.1:1")  # type: ignore[abstract]


def test_needs_a_url_or_a_provider() -> None:
    with pytest.raises(ValueError, match="base_url or a provider"):
        TEnv()


def test_base_url_is_normalised(server: Any) -> None:
    env = TEnv(base_url=server.url + "/")
    assert env.base_url == server.url
    assert TEnv(base_url="ws://127.0.0.1:9/").base_url == "ws://127.0.0.1:9"


def test_async_episode_through_the_hooks(server: Any) -> None:
    async def main() -> tuple[Any, ...]:
        async with TEnv(base_url=server.url) as env:
            first = await env.reset(seed=7)
            second = await env.step(TAction(message="hi"))
            last = await env.step(TAction(message="bye", done=True))
            state = await env.state()
        return first, second, last, state

    first, second, last, state = asyncio.run(main())
    assert isinstance(first, StepResult)
    assert isinstance(first, OurStepResult)
    assert first.observation.message == "ready"
    assert first.observation.seed == 7
    assert isinstance(second.observation, TObservation)
    assert (second.observation.message, second.observation.step) == ("hi", 1)
    assert (second.reward, second.done) == (1.0, False)
    assert (last.reward, last.done) == (2.0, True)
    assert isinstance(state, TState)
    assert state.step_count == 2


def test_sync_wrapper_episode(server: Any) -> None:
    with TEnv(base_url=server.url).sync() as env:
        assert env.reset().observation.message == "ready"
        result = env.step(TAction(message="a"))
        assert (result.observation.message, result.reward) == ("a", 1.0)
        assert env.state().step_count == 1


def test_plain_calls_from_sync_code(server: Any) -> None:
    """Upstream 0.10 lets sync code call ``reset``/``step`` directly and use ``with``."""
    with TEnv(base_url=server.url) as env:
        assert env.reset().observation.message == "ready"
        assert env.step(TAction(message="x")).observation.step == 1
        assert env.state().step_count == 1


def test_mixing_sync_and_async_use_is_refused(server: Any) -> None:
    env = TEnv(base_url=server.url)
    env.sync().reset()

    async def main() -> None:
        async with env:
            pass

    with pytest.raises(RuntimeError, match="sync"):
        asyncio.run(main())
    env.close()


def test_reset_kwargs_reach_the_env(server: Any) -> None:
    with TEnv(base_url=server.url).sync() as env:
        obs = env.reset(seed=3, difficulty="hard").observation
    assert obs.seed == 3
    assert obs.options == {"difficulty": "hard"}


def test_server_errors_stay_typed(server: Any) -> None:
    class FailingEnv(TEnv):
        def _step_payload(self, action: TAction) -> dict[str, Any]:
            return {"fail": action.message}

    with FailingEnv(base_url=server.url).sync() as env:
        env.reset()
        with pytest.raises(ExecutionError, match="boom"):
            env.step(TAction(message="boom"))


def test_connect_failure_is_typed_and_prompt() -> None:
    env = TEnv(base_url="http://127.0.0.1:1", connect_timeout_s=2)
    with pytest.raises(ConnectError):
        env.sync().connect()


def test_new_session_is_another_env_instance(server: Any) -> None:
    async def main() -> tuple[int, int]:
        async with TEnv(base_url=server.url) as env:
            child = await env.new_session()
            a = (await env.reset()).observation.instance
            b = (await child.reset()).observation.instance
            return a, b

    a, b = asyncio.run(main())
    assert a != b
    server.wait_closes([1, 1])


def test_sync_new_session(server: Any) -> None:
    with TEnv(base_url=server.url).sync() as env:
        child = env.new_session()
        assert child.reset().observation.instance != env.reset().observation.instance
    server.wait_closes([1, 1])


def test_sync_wrapper_runs_subclass_coroutines(server: Any) -> None:
    """A subclass's own async method that awaits ``self.step`` works through ``.sync()``."""

    class Chatty(TEnv):
        async def say_twice(self, text: str) -> list[str]:
            out = []
            for _ in range(2):
                result = await self.step(TAction(message=text))
                out.append(result.observation.message)
            return out

    with Chatty(base_url=server.url).sync() as env:
        env.reset()
        assert env.say_twice("yo") == ["yo", "yo"]
        assert env.state().step_count == 2


def test_sync_wrapper_inside_a_running_loop(server: Any) -> None:
    """Blocking calls from inside async code drive the hooks without an event-loop hop."""

    async def main() -> str:
        with TEnv(base_url=server.url).sync() as env:
            env.reset()
            return env.step(TAction(message="in-loop")).observation.message

    assert asyncio.run(main()) == "in-loop"


def test_close_is_idempotent(server: Any) -> None:
    env = TEnv(base_url=server.url).sync()
    env.reset()
    env.close()
    env.close()
    server.wait_closes([1])
