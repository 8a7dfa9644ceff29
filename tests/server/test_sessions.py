"""Sessions: the manager and lifecycle (in-loop), HTTP ``/sessions``, teardown on every path."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from typing import Any

import httpx
import pytest

from openenv import (
    CapacityReached,
    ExecutionError,
    FactoryError,
    ResetRequired,
    SessionBusy,
    SessionClosed,
    SessionNotFound,
)
from openenv._env import Execution
from openenv._protocol import ResetData
from openenv.server import SessionManager, SessionState
from openenv.server._runner import EnvRunner

from .._envs import TAction, make_env
from .._wire import call, connect, expect_closed, masked_frame, raw_handshake, recv, send
from ..conftest import wait_until
from ._idle_clock import idle_clock

__all__ = ["idle_clock"]  # the fixture, used by name


def manager_for(env_class: Any, max_sessions: int = 8, idle_timeout_s: float = 0.0,
                factory: Any = None) -> SessionManager:
    runner = EnvRunner(env_class, factory or env_class, slow_call_s=10.0, thread_workers=4)
    return SessionManager(runner, max_sessions, idle_timeout_s)


class FakeOwner:
    def __init__(self) -> None:
        self.reaped: list[tuple[list[Any], str]] = []

    async def reap(self, sessions: list[Any], reason: str) -> None:
        self.reaped.append((sessions, reason))
        for s in sessions:
            await s.close(reason)


# --- SessionManager / Session (on the test's own loop) ------------------------------------------


async def test_session_lifecycle_states():
    env = make_env()
    manager = manager_for(env)
    session = await manager.open(owner=None)
    assert session.state is SessionState.READY
    assert manager.get(session.id) is session
    with pytest.raises(ResetRequired):
        await session.step(TAction())
    with pytest.raises(ResetRequired):
        await session.get_state()
    obs = await session.reset(ResetData.model_validate({"seed": 1, "episode_id": "e", "x": 2}))
    assert (obs.seed, obs.episode_id, obs.options) == (1, "e", {"x": 2})
    assert session.state is SessionState.ACTIVE
    assert (await session.step(TAction(message="m"))).message == "m"
    assert (await session.get_state()).step_count == 1
    await session.close("done here")
    assert session.state is SessionState.CLOSED
    with pytest.raises(SessionClosed, match="done here"):
        await session.step(TAction())
    with pytest.raises(SessionClosed):
        await session.reset(ResetData())
    with pytest.raises(SessionNotFound):
        manager.get(session.id)
    await manager.shutdown()


async def test_close_is_idempotent_and_calls_env_close_once():
    env = make_env()
    manager = manager_for(env)
    session = await manager.open(owner=None)
    await asyncio.gather(session.close(), session.close(), session.close())
    await session.close()
    assert env.tracker.close_counts() == [1]
    assert manager.active == 0
    await manager.shutdown()


async def test_session_ids_are_unique_hex():
    manager = manager_for(make_env())
    ids = {(await manager.open(owner=None)).id for _ in range(5)}
    assert len(ids) == 5
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    await manager.shutdown()


async def test_env_exception_is_execution_error_and_session_stays_active():
    manager = manager_for(make_env())
    session = await manager.open(owner=None)
    await session.reset(ResetData())
    with pytest.raises(ExecutionError) as info:
        await session.step(TAction(fail="bad thing"))
    assert info.value.details == {"exception": "RuntimeError"}
    assert "step failed: RuntimeError: bad thing" in info.value.message
    assert session.state is SessionState.ACTIVE
    assert session.busy is None
    assert (await session.step(TAction())).step == 1
    await manager.shutdown()


async def test_a_second_call_on_a_busy_session_is_refused_and_not_applied():
    gate = threading.Event()  # the first step is held until the refusals are checked
    env = make_env(step_gate=gate)
    manager = manager_for(env)
    session = await manager.open(owner=None)
    await session.reset(ResetData())
    first = asyncio.ensure_future(session.step(TAction(message="hold")))
    try:
        for _ in range(600):  # until the step is in the env (bounded: 30 s)
            if env.tracker.count("held"):
                break
            await asyncio.sleep(0.05)
        assert session.busy == "step"
        refused = [
            (session.step, (TAction(message="second"),)),
            (session.reset, (ResetData(),)),
            (session.get_state, ()),
        ]
        for method, args in refused:
            with pytest.raises(SessionBusy) as info:
                await method(*args)
            assert info.value.details["busy_with"] == "step"
            assert info.value.details["applied"] is False
    finally:
        gate.set()
    assert (await first).message == "hold"
    assert session.busy is None
    assert (await session.get_state()).step_count == 1  # only the first call was applied
    assert (await session.step(TAction(message="after"))).step == 2  # and the session goes on
    await manager.shutdown()


async def test_env_returning_the_wrong_type_is_execution_error():
    env = make_env()
    env.step = lambda self, action: {"not": "an observation"}
    env.state = lambda self: "nope"
    manager = manager_for(env)
    session = await manager.open(owner=None)
    await session.reset(ResetData())
    with pytest.raises(ExecutionError, match="not an Observation"):
        await session.step(TAction())
    with pytest.raises(ExecutionError, match="not a State"):
        await session.get_state()
    await manager.shutdown()


async def test_capacity_is_reserved_before_the_env_is_built():
    env = make_env()
    original = env.__init__

    def slow_init(self: Any) -> None:
        time.sleep(0.2)  # runs on a worker thread
        original(self)

    env.__init__ = slow_init
    manager = manager_for(env, max_sessions=2)
    results = await asyncio.gather(*(manager.open(owner=None) for _ in range(5)), return_exceptions=True)
    opened = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, CapacityReached)]
    assert (len(opened), len(refused)) == (2, 3)
    assert refused[0].details == {"active_sessions": 2, "max_sessions": 2}
    assert manager.active == 2
    assert len(env.tracker.instances) == 2
    await manager.shutdown()


async def test_failed_construction_frees_the_slot():
    manager = manager_for(make_env(fail_on_init=True), max_sessions=1)
    for _ in range(3):
        with pytest.raises(FactoryError) as info:
            await manager.open(owner=None)
    assert info.value.details["factory_name"] == "SyncThreadEnv"
    assert manager.active == 0
    await manager.shutdown()


async def test_env_class_limit_caps_the_manager():
    assert manager_for(make_env(max_sessions=3), max_sessions=100).max_sessions == 3
    assert manager_for(make_env(max_sessions=300), max_sessions=100).max_sessions == 100
    assert manager_for(make_env(), max_sessions=7).stats() == {"active_sessions": 0, "max_sessions": 7}


async def test_reap_idle_closes_idle_sessions_by_owner_and_skips_busy_ones():
    gate = threading.Event()
    env = make_env(step_gate=gate)
    manager = manager_for(env, idle_timeout_s=0.05)
    owner = FakeOwner()
    lone = await manager.open(owner=None)
    owned = [await manager.open(owner=owner) for _ in range(2)]
    busy = await manager.open(owner=None)
    await busy.reset(ResetData())
    step = asyncio.ensure_future(busy.step(TAction(message="hold")))  # held until the gate opens
    try:
        for _ in range(600):
            if env.tracker.count("held"):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # the others are quiet past the 0.05 s timeout
        assert busy.busy == "step"
        assert await manager.reap_idle() == 3
        assert lone.state is SessionState.CLOSED
        assert len(owner.reaped) == 1
        assert owner.reaped[0][0] == owned
        assert owner.reaped[0][1] == "idle timeout"
        assert busy.state is SessionState.ACTIVE
    finally:
        released = time.monotonic()
        gate.set()
    await step
    assert busy.state is SessionState.ACTIVE
    assert busy.last_active >= released  # quiet counts from the call's end: not idle yet
    await manager.shutdown()


async def test_reaper_task_runs_only_with_a_timeout():
    quiet = manager_for(make_env(), idle_timeout_s=0)
    quiet.start()
    assert quiet._reaper is None
    env = make_env()
    busy = manager_for(env, idle_timeout_s=0.1)
    busy.start()
    session = await busy.open(owner=None)
    for _ in range(100):
        if session.state is SessionState.CLOSED:
            break
        await asyncio.sleep(0.02)
    assert session.state is SessionState.CLOSED
    assert session.closed_reason == "idle timeout"
    await busy.shutdown()
    assert busy._reaper is None


async def test_shutdown_closes_every_session_once():
    env = make_env("async")
    manager = manager_for(env)
    sessions = [await manager.open(owner=None) for _ in range(4)]
    await sessions[0].close()
    await manager.shutdown()
    assert all(s.state is SessionState.CLOSED for s in sessions)
    assert sessions[1].closed_reason == "server shutdown"
    assert env.tracker.close_counts() == [1, 1, 1, 1]
    assert manager.active == 0


# --- HTTP /sessions ----------------------------------------------------------------------------


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def test_http_session_lifecycle(server, http):
    assert http.get("/sessions").json() == {"active_sessions": 0, "max_sessions": 64}
    r = http.post("/sessions")
    assert r.status_code == 201
    sid = r.json()["session_id"]
    assert set(r.json()) == {"session_id"}
    assert http.get("/sessions").json()["active_sessions"] == 1

    reset = http.post(f"/sessions/{sid}/reset", json={"seed": 2, "level": 5})
    assert reset.status_code == 200
    body = reset.json()
    assert {"observation", "reward", "done", "truncated"} <= set(body)
    assert body["truncated"] is False
    assert body["observation"]["options"] == {"level": 5}

    step = http.post(f"/sessions/{sid}/step", json={"action": {"message": "a", "truncated": True}})
    assert step.status_code == 200
    assert step.json()["truncated"] is True
    assert step.json()["done"] is True
    after_end = http.post(f"/sessions/{sid}/step", json={"action": {"message": "b"}})
    assert after_end.status_code == 409  # the episode ended: nothing applied
    assert after_end.json()["error"]["code"] == "RESET_REQUIRED"
    state = http.get(f"/sessions/{sid}/state").json()
    assert state["step_count"] == 1
    assert len(server.tracker.instances) == 1  # one env for the whole episode

    closed = http.delete(f"/sessions/{sid}")
    assert closed.status_code == 200
    assert closed.json() == {"session_id": sid, "closed": True}
    assert server.tracker.close_counts() == [1]
    assert http.get("/sessions").json()["active_sessions"] == 0

    for method, path in [("POST", f"/sessions/{sid}/reset"), ("POST", f"/sessions/{sid}/step"),
                         ("GET", f"/sessions/{sid}/state"), ("DELETE", f"/sessions/{sid}")]:
        r = http.request(method, path, json={"action": {}} if method == "POST" else None)
        assert r.status_code == 404, (method, path)
        assert r.json()["error"]["code"] == "SESSION_NOT_FOUND"


def test_unknown_session_id_is_404(http):
    r = http.get("/sessions/does-not-exist/state")
    assert r.status_code == 404
    body = r.json()
    assert body["error"]["code"] == "SESSION_NOT_FOUND"
    assert "does-not-exist" in body["detail"]


def test_http_session_step_before_reset_is_409(http):
    sid = http.post("/sessions").json()["session_id"]
    r = http.post(f"/sessions/{sid}/step", json={"action": {}})
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "RESET_REQUIRED"
    assert http.get(f"/sessions/{sid}/state").status_code == 409


def test_http_session_invalid_action_is_422(http):
    sid = http.post("/sessions").json()["session_id"]
    http.post(f"/sessions/{sid}/reset", json={})
    r = http.post(f"/sessions/{sid}/step", json={"action": {"message": 1}})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "VALIDATION_ERROR"
    assert http.get(f"/sessions/{sid}/state").json()["step_count"] == 0


def test_http_session_env_error_is_500_and_session_survives(http):
    sid = http.post("/sessions").json()["session_id"]
    http.post(f"/sessions/{sid}/reset", json={})
    r = http.post(f"/sessions/{sid}/step", json={"action": {"fail": "x"}})
    assert r.status_code == 500
    assert r.json()["error"]["code"] == "EXECUTION_ERROR"
    assert http.post(f"/sessions/{sid}/step", json={"action": {}}).status_code == 200


def test_http_sessions_count_against_capacity(serve):
    server = serve(max_sessions=2)
    with httpx.Client(base_url=server.url, timeout=10) as http:
        first = http.post("/sessions").json()["session_id"]
        http.post("/sessions")
        r = http.post("/sessions")
        assert r.status_code == 503
        assert r.json()["error"]["code"] == "CAPACITY_REACHED"
        with connect(server.ws_url) as ws:
            assert recv(ws)["data"]["code"] == "CAPACITY_REACHED"
            assert expect_closed(ws) == 1013
        http.delete(f"/sessions/{first}")
        assert http.post("/sessions").status_code == 201


def test_idle_http_session_is_reaped(serve):
    server = serve(idle_timeout_s=0.3)
    with httpx.Client(base_url=server.url, timeout=10) as http:
        sid = http.post("/sessions").json()["session_id"]
        http.post(f"/sessions/{sid}/reset", json={})
        server.wait_closes([1], timeout_s=5)
        assert http.get("/sessions").json()["active_sessions"] == 0
        r = http.get(f"/sessions/{sid}/state")
        assert r.status_code == 404
        assert r.json()["error"]["code"] == "SESSION_NOT_FOUND"


def test_http_session_kept_alive_by_use_is_not_reaped(serve, idle_clock):
    """Quiet time is the idle clock's (moved by the test), not the host's: each 0.15 s
    gap is under the 0.2 s timeout, the five add up past it; a reaper pass follows each."""
    server = serve(idle_timeout_s=0.2)
    idle_clock.watch(server.manager)
    with httpx.Client(base_url=server.url, timeout=10) as http:
        sid = http.post("/sessions").json()["session_id"]
        http.post(f"/sessions/{sid}/reset", json={})
        for _ in range(5):
            idle_clock.advance(0.15)
            idle_clock.settle()
            assert http.post(f"/sessions/{sid}/step", json={"action": {}}).status_code == 200
        assert http.get(f"/sessions/{sid}/state").json()["step_count"] == 5
        assert server.tracker.close_counts() == [0]
        idle_clock.advance(0.3)  # and once quiet past the timeout, it goes
        server.wait_closes([1], timeout_s=10)


# --- teardown: env.close exactly once on every path ------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_teardown_on_close_message(serve, kind):
    server = serve(make_env(kind))
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        send(ws, {"type": "close"})
        expect_closed(ws)
    server.wait_closes([1])


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_teardown_on_disconnect(serve, kind):
    server = serve(make_env(kind))
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "a"})
        call(ws, {"type": "reset", "session": "b"})
    server.wait_closes([1, 1])
    server.wait_active(0)


def test_teardown_on_abrupt_tcp_reset(server):
    sock = raw_handshake(server.port)
    sock.sendall(masked_frame(b'{"type": "reset"}'))
    wait_until(lambda: server.tracker.count("reset") == 1, what="reset")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    server.wait_closes([1])
    server.wait_active(0)


def test_teardown_on_protocol_error(serve):
    server = serve(max_frame_bytes=1024)
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "a"})
        call(ws, {"type": "reset", "session": "b"})
        send(ws, {"type": "step", "session": "a", "data": {"message": "z" * 5000}})
        assert expect_closed(ws) == 1009
    server.wait_closes([1, 1])
    server.wait_active(0)


def test_teardown_after_env_errors(serve):
    server = serve(make_env(fail_on_reset=True))
    with connect(server.ws_url) as ws:
        assert call(ws, {"type": "reset"})["data"]["code"] == "EXECUTION_ERROR"
    server.wait_closes([1])


@pytest.mark.parametrize("execution", [Execution.INLINE, Execution.THREAD, Execution.DEDICATED_THREAD])
def test_teardown_on_server_shutdown(serve, execution):
    server = serve(make_env(execution=execution))
    plain = connect(server.ws_url)
    call(plain, {"type": "reset"})
    extended = connect(server.ws_url, extended=True)
    call(extended, {"type": "reset", "session": "x"})
    call(extended, {"type": "reset", "session": "y"})
    sid = httpx.post(f"{server.url}/sessions", timeout=5).json()["session_id"]
    httpx.post(f"{server.url}/sessions/{sid}/reset", json={}, timeout=5)
    assert server.active == 4

    server.stop()  # uvicorn shutdown, then the lifespan's manager.shutdown()

    assert server.tracker.close_counts() == [1, 1, 1, 1]
    assert server.active == 0
    assert expect_closed(plain) == 1012
    assert expect_closed(extended) == 1012


def test_teardown_on_shutdown_during_a_slow_step(serve):
    server = serve()
    ws = connect(server.ws_url)
    call(ws, {"type": "reset"})
    send(ws, {"type": "step", "data": {"sleep_s": 0.5}})
    wait_until(lambda: server.tracker.count("step") == 1, what="the step to start")
    server.stop()
    assert server.tracker.close_counts() == [1]
    ws.close()


async def test_session_that_becomes_busy_during_a_reap_pass_is_not_reaped():
    """The reaper awaits each close; a session it listed as idle may start a call meanwhile."""
    env = make_env("async")
    release = asyncio.Event()
    original_close = env.close

    async def slow_close(self):
        await release.wait()
        await original_close(self)

    env.close = slow_close
    manager = manager_for(env, idle_timeout_s=0.05)
    first = await manager.open(owner=None)
    second = await manager.open(owner=None)
    await second.reset(ResetData())
    await asyncio.sleep(0.1)  # both idle now

    reaping = asyncio.ensure_future(manager.reap_idle())
    await asyncio.sleep(0.05)  # the reaper is inside first.close()
    assert first.state is SessionState.CLOSED
    stepping = asyncio.ensure_future(second.step(TAction(sleep_s=0.3)))
    await asyncio.sleep(0.05)
    assert second.busy
    release.set()
    await reaping
    result = await stepping
    assert result.step == 1
    assert second.state is SessionState.ACTIVE
    assert env.tracker.close_counts() == [1, 0]
    await manager.shutdown()
