"""``AsyncEnvClient`` against a real server over real sockets."""

from __future__ import annotations

import asyncio

import pytest

from openenv import (
    GENERIC_MODELS,
    AsyncEnvClient,
    BatchError,
    ConnectError,
    ConnectionClosed,
    DeadlineExceeded,
    ExecutionError,
    FrameTooLarge,
    OpenEnvError,
    RequestTimeout,
    ResetRequired,
    SessionClosed,
    StepResult,
    TransportError,
    ValidationFailed,
)
from openenv._env import Execution

from .._envs import MODELS, TAction, TObservation, TState, make_env
from ..conftest import free_port, socket_closed


async def test_typed_episode(server):
    async with AsyncEnvClient(server.url, MODELS) as env:
        assert env.extended is True
        first = await env.reset(seed=4, episode_id="ep-1", level="hard")
        step = await env.step(TAction(message="hello"))
        state = await env.state()
    assert isinstance(first.observation, TObservation)
    assert (first.observation.seed, first.observation.options) == (4, {"level": "hard"})
    assert (step.observation.message, step.reward) == ("hello", 1.0)
    assert isinstance(state, TState)
    assert (state.episode_id, state.step_count) == ("ep-1", 1)


async def test_terminated_and_truncated(server):
    async with AsyncEnvClient(server.url, MODELS) as env:
        await env.reset()
        ended = await env.step(TAction(done=True))
        with pytest.raises(ResetRequired, match="episode is over"):
            await env.step(TAction())  # after the end: refused, nothing applied
        await env.reset()
        cut = await env.step(TAction(truncated=True))
    assert (ended.terminated, ended.truncated) == (True, False)
    assert (cut.terminated, cut.truncated, cut.done) == (False, True, True)


async def test_generic_client_gets_dicts(server):
    async with AsyncEnvClient(server.url, GENERIC_MODELS) as env:
        await env.reset()
        result = await env.step({"message": "x"})
        state = await env.state()
    assert result.observation["message"] == "x"
    assert state["step_count"] == 1


async def test_without_extensions_it_speaks_upstream(server):
    async with AsyncEnvClient(server.url, MODELS, extensions=False) as env:
        assert env.extended is False
        await env.reset()
        assert (await env.step(TAction())).observation.step == 1
        with pytest.raises(OpenEnvError, match=r"openenv\.v1"):
            await env.reset(session="a")


async def test_named_sessions_and_close_session(server):
    async with AsyncEnvClient(server.url, MODELS) as env:
        a = (await env.reset(session="a")).observation.instance
        b = (await env.reset(session="b")).observation.instance
        await env.step(TAction(), session="a")
        assert (await env.state(session="a")).step_count == 1
        await env.close_session("a")
        with pytest.raises(ResetRequired):
            await env.state(session="a")
        assert (await env.step(TAction(), session="b")).observation.instance == b
    assert a != b


async def test_reset_batch_and_step_batch(server):
    keys = [f"k{i}" for i in range(5)]
    async with AsyncEnvClient(server.url, MODELS) as env:
        resets = await env.reset_batch(keys, seed=0)
        steps = await env.step_batch({k: TAction(message=k) for k in keys})
    assert [r.observation.seed for r in resets] == [0, 1, 2, 3, 4]
    assert [s.observation.message for s in steps] == keys


async def test_step_batch_errors_per_item(server):
    async with AsyncEnvClient(server.url, MODELS) as env:
        await env.reset_batch(["a", "b"])
        out = await env.step_batch({"a": TAction(fail="x"), "b": TAction()}, return_exceptions=True)
        assert isinstance(out[0], ExecutionError)
        assert isinstance(out[1], StepResult)
        with pytest.raises(BatchError) as info:
            await env.step_batch({"a": TAction(fail="x"), "b": TAction()})
        assert isinstance(info.value.results[0], ExecutionError)
        assert info.value.results[1].observation.step == 2


async def test_server_errors_raise_typed_exceptions(server):
    async with AsyncEnvClient(server.url, MODELS) as env:
        with pytest.raises(ResetRequired):
            await env.step(TAction())
        await env.reset()
        with pytest.raises(ValidationFailed):
            await env.step({"bogus": 1})
        with pytest.raises(ExecutionError, match="kaboom"):
            await env.step(TAction(fail="kaboom"))
        assert (await env.step(TAction())).observation.step == 1


@pytest.mark.parametrize("binary", [False, True])
async def test_bytes_fields_round_trip(server, binary):
    async with AsyncEnvClient(server.url, MODELS, binary=binary) as env:
        await env.reset()
        result = await env.step(TAction(blob_size=777))
    assert result.observation.blob == bytes(i % 256 for i in range(777))


async def test_client_timeout_is_the_server_deadline(server):
    async with AsyncEnvClient(server.url, MODELS) as env:
        await env.reset()
        with pytest.raises(DeadlineExceeded) as info:
            await env.step(TAction(message="slow", sleep_s=1.0), timeout_s=0.2)
        assert info.value.details["session_closed"] is True
        with pytest.raises(SessionClosed, match="overran its deadline"):
            await env.step(TAction(message="next"))
        assert (await env.reset()).observation.step == 0


@pytest.mark.socket_only
async def test_timeout_on_extended_connection_does_not_desync(serve):
    server = serve(make_env(execution=Execution.INLINE))  # a blocked loop: no deadline
    async with AsyncEnvClient(server.url, MODELS) as env:
        env.reply_margin_s = 0.0
        await env.reset()
        with pytest.raises(RequestTimeout, match="may have been applied"):
            await env.step(TAction(message="slow", sleep_s=1.2), timeout_s=0.2)  # 1 s of margin
        after = await env.step(TAction(message="next"), timeout_s=10)
        assert (after.observation.message, after.observation.step) == ("next", 2)
        assert (await env.state()).step_count == 2


@pytest.mark.socket_only
async def test_a_short_deadline_left_armed_does_not_cut_a_later_longer_call(server):
    # the connection keeps one timer, re-armed lazily: the 0.3 s one of the first call
    # fires during the second call, which must go on waiting to its own deadline
    async with AsyncEnvClient(server.url, MODELS) as env:
        env.reply_margin_s = 0.0
        await env.reset()
        assert (await env.step(TAction(message="quick"), timeout_s=0.3)).observation.step == 1
        slow = await env.step(TAction(message="slow", sleep_s=0.8), timeout_s=5)
        assert (slow.observation.message, slow.observation.step) == ("slow", 2)


async def test_timeout_without_extensions_drops_the_socket(server):
    env = AsyncEnvClient(server.url, MODELS, extensions=False)
    await env.reset()
    with pytest.raises(RequestTimeout):
        await env.step(TAction(sleep_s=1.0), timeout_s=0.2)
    with pytest.raises(SessionClosed, match="create a new one"):
        await env.step(TAction())
    await asyncio.to_thread(server.wait_active, 0)
    await asyncio.to_thread(server.wait_closes, [1])
    await env.close()


@pytest.mark.socket_only
async def test_frame_too_large(serve):
    server = serve(max_frame_bytes=2048)
    async with AsyncEnvClient(server.url, MODELS) as env:
        await env.reset()
        with pytest.raises(FrameTooLarge, match=r"limit of 2048 bytes.*OPENENV_MAX_FRAME_BYTES") as info:
            await env.step(TAction(message="x" * 10_000))
        assert info.value.details["limit"] == 2048
        with pytest.raises(SessionClosed):
            await env.step(TAction())
    await asyncio.to_thread(server.wait_active, 0)


@pytest.mark.socket_only
async def test_reply_over_the_client_limit_is_a_transport_error(server):
    async with AsyncEnvClient(server.url, MODELS, max_frame_bytes=2000) as env:
        await env.reset()
        with pytest.raises(TransportError):
            await env.step(TAction(blob_size=5000))


async def test_idle_reap_surfaces_as_connection_closed_4408(serve):
    server = serve(idle_timeout_s=0.3)
    async with AsyncEnvClient(server.url, MODELS) as env:
        await env.reset()
        await asyncio.to_thread(server.wait_closes, [1])  # the reaper closes the env first, then the socket
        for _ in range(600):
            if socket_closed(server):
                break
            await asyncio.sleep(0.05)
        with pytest.raises(ConnectionClosed) as info:
            await env.step(TAction())
        assert info.value.code == 4408


async def test_idle_async_client_answers_pings(serve):
    # quiet 1.5 s, past a ping's 0.2 s + 1.0 s; each pong has 1.0 s on a loaded host
    server = serve(ping_interval_s=0.2, ping_timeout_s=1.0)
    async with AsyncEnvClient(server.url, MODELS) as env:
        await env.reset()
        await asyncio.sleep(1.5)
        assert (await env.step(TAction(message="alive"))).observation.message == "alive"


async def test_connect_error_when_nothing_listens():
    env = AsyncEnvClient(f"http://127.0.0.1:{free_port()}", MODELS, connect_timeout_s=2)
    with pytest.raises(ConnectError):
        await env.reset()


async def test_connect_error_on_a_non_websocket_path(server):
    with pytest.raises(ConnectError):
        await AsyncEnvClient(f"{server.url}/nope", MODELS).connect()


async def test_close_is_idempotent_and_later_use_is_a_clear_error(server):
    env = AsyncEnvClient(server.url, MODELS)
    await env.reset()
    calls: list[str] = []
    env.on_close(lambda: calls.append("closed"))
    await env.close()
    await env.close()
    assert calls == ["closed"]
    with pytest.raises(SessionClosed):
        await env.step(TAction())
    await asyncio.to_thread(server.wait_closes, [1])


async def test_many_clients_concurrently(serve):
    server = serve(make_env("async"))

    async def episode(i: int) -> int:
        async with AsyncEnvClient(server.url, MODELS) as env:
            await env.reset(seed=i)
            for _ in range(3):
                await env.step(TAction(sleep_s=0.05))
            return (await env.state()).step_count

    counts = await asyncio.gather(*(episode(i) for i in range(10)))
    assert counts == [3] * 10
    await asyncio.to_thread(server.wait_closes, [1] * 10)
