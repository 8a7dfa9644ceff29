"""Deadlines on env calls, one call at a time per session, and AUTO envs off the loop.

Every env here blocks or hangs on purpose; each test checks that the overrun is typed,
that other sessions keep working, and that the slot comes back.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import orjson
import pytest

from openenv import Action as BaseAction
from openenv import (
    AsyncEnvClient,
    AsyncEnvironment,
    DeadlineExceeded,
    EnvClient,
    Environment,
    Execution,
    Observation,
    SessionBusy,
    SessionClosed,
    State,
)

from .._wire import call, connect


class Act(BaseAction):
    sleep_s: float = 0.0
    hold: bool = False


class Obs(Observation):
    slept: float = 0.0
    interrupted: bool = False


class Hung(Environment[Act, Obs, State]):
    """Sleeps as long as asked; nothing can stop it early (no ``interrupt``)."""

    execution = Execution.THREAD
    closes: list[float] = []

    def __init__(self) -> None:
        self._state = State()

    def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
        return Obs()

    def step(self, action: Act) -> Obs:
        time.sleep(action.sleep_s)
        self._state.step_count += 1
        return Obs(slept=action.sleep_s)

    def state(self) -> State:
        return self._state

    def close(self) -> None:
        type(self).closes.append(time.monotonic())


class Held(Hung):
    """A step with ``hold`` sets ``entered``, then waits until the test sets ``gate`` (bounded)."""

    entered: threading.Event
    gate: threading.Event

    def step(self, action: Act) -> Obs:
        if action.hold:
            type(self).entered.set()
            type(self).gate.wait(30)
        return super().step(action)


def held() -> Any:
    return fresh(Held, entered=threading.Event(), gate=threading.Event())


class Interruptible(Hung):
    """A step waits on an event that ``interrupt()`` sets (a child process's Ctrl-C)."""

    def __init__(self) -> None:
        super().__init__()
        self._stop = threading.Event()

    def step(self, action: Act) -> Obs:
        self._stop.clear()
        stopped = self._stop.wait(action.sleep_s)
        self._state.step_count += 1
        return Obs(slept=action.sleep_s, interrupted=stopped)

    def interrupt(self) -> None:
        self._stop.set()


class AsyncHung(AsyncEnvironment[Act, Obs, State]):
    closes: list[float] = []

    def __init__(self) -> None:
        self._state = State()

    async def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
        return Obs()

    async def step(self, action: Act) -> Obs:
        await asyncio.sleep(action.sleep_s)
        self._state.step_count += 1
        return Obs(slept=action.sleep_s)

    async def state(self) -> State:
        return self._state

    async def close(self) -> None:
        type(self).closes.append(time.monotonic())


def fresh(cls: type, **attrs: Any) -> Any:
    return type(cls.__name__, (cls,), {"closes": [], **attrs})


def _other_session_steps(server: Any, steps: int = 5) -> None:
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        for _ in range(steps):
            assert call(ws, {"type": "step", "data": {}})["type"] == "observation"


def test_hung_sync_env_session_is_closed_and_its_slot_freed(serve):
    env = held()
    # The server's default deadline, 1 s: the other session's calls keep it too, and a
    # loaded host must not push them past it.
    server = serve(env, max_sessions=2, call_timeout_s=1.0, interrupt_grace_s=0.1)
    with EnvClient(server.url, extensions=False) as hung:  # the server's default deadline
        hung.reset()
        try:  # everything below happens while the hung call is still held
            with pytest.raises(DeadlineExceeded, match="could not be interrupted") as info:
                hung.step({"hold": True})
            assert info.value.details["session_closed"] is True
            assert server.active == 0  # the slot is free while the stray call still runs
            assert env.closes == []  # never closed under the running call
            _other_session_steps(server)
            with pytest.raises(SessionClosed, match="overran its deadline"):
                hung.step({})
            assert len(env.closes) <= 1  # the other session's env at most, never the hung one
        finally:
            released = time.monotonic()
            env.gate.set()
    deadline = time.monotonic() + 30
    while len(env.closes) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(env.closes) == 2  # the other session's env, and the hung one once its call returned
    assert max(env.closes) > released


def test_interruptible_env_keeps_its_session(serve):
    server = serve(fresh(Interruptible), interrupt_grace_s=1.0)
    with EnvClient(server.url) as env:
        env.reset()
        with pytest.raises(DeadlineExceeded, match="interrupted; the session is still usable") as info:
            env.step({"sleep_s": 30.0}, timeout_s=0.2)
        assert info.value.details["session_closed"] is False
        assert env.state()["step_count"] == 1  # the interrupted step returned (and counted)
        assert env.step({"sleep_s": 0.0}).observation["slept"] == 0.0


def test_hung_async_env_is_cancelled_and_keeps_its_session(serve):
    env = fresh(AsyncHung)
    server = serve(env)
    with EnvClient(server.url) as client:
        client.reset()
        with pytest.raises(DeadlineExceeded, match="cancelled") as info:
            client.step({"sleep_s": 30.0}, timeout_s=0.2)
        assert info.value.details == {
            "timeout_s": 0.2, "call": "step", "session_closed": False, "applied": "unknown"
        }
        _other_session_steps(server)
        assert client.step({}).observation["slept"] == 0.0
        assert client.state()["step_count"] == 1


def test_request_timeout_overrides_the_servers_up_to_its_cap(serve):
    # A 0.2 s step: 4x the server's default, 0.8 s under the cap (a loaded host's margin).
    server = serve(fresh(AsyncHung), call_timeout_s=0.05, max_call_timeout_s=1.0)
    with EnvClient(server.url) as client:
        client.reset()
        assert client.step({"sleep_s": 0.2}, timeout_s=5.0).observation["slept"] == 0.2  # > server default
        with pytest.raises(DeadlineExceeded) as info:
            client.step({"sleep_s": 30.0}, timeout_s=60.0)
        assert info.value.details["timeout_s"] == 1.0  # capped by max_call_timeout_s


def test_env_declares_its_own_deadline(serve):
    server = serve(fresh(AsyncHung, call_timeout_s=0.1), call_timeout_s=100.0)
    with EnvClient(server.url, extensions=False) as client:  # upstream dialect: no timeout_s sent
        client.reset()
        with pytest.raises(DeadlineExceeded):
            client.step({"sleep_s": 5.0})


def test_http_step_timeout_is_its_deadline(serve):
    server = serve(fresh(AsyncHung))
    r = httpx.post(f"{server.url}/step", json={"action": {"sleep_s": 5.0}, "timeout_s": 0.1,
                                               "request_id": "r-1"}, timeout=10)
    assert r.status_code == 504
    assert r.json()["error"]["code"] == "DEADLINE_EXCEEDED"
    ok = httpx.post(f"{server.url}/step", json={"action": {}, "request_id": "r-2"}, timeout=10)
    assert ok.headers["x-request-id"] == "r-2"


def test_reaper_takes_a_session_stuck_in_a_call(serve):
    env = held()
    server = serve(env, call_timeout_s=0, idle_timeout_s=0.2, interrupt_grace_s=0.0)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        ws.send('{"type": "step", "data": {"hold": true}}')
        try:
            assert env.entered.wait(30)
            server.wait_active(0, timeout_s=30)  # reaped while still in the call
        finally:
            env.gate.set()


# --- one call at a time ------------------------------------------------------------------------


def test_concurrent_step_state_and_http_step_on_one_session_are_refused_not_interleaved(serve):
    env = held()
    server = serve(env)
    http = httpx.Client(base_url=server.url, timeout=40)
    sid = http.post("/sessions").json()["session_id"]
    http.post(f"/sessions/{sid}/reset", json={})
    results: dict[str, Any] = {}

    def slow() -> None:
        results["slow"] = http.post(f"/sessions/{sid}/step", json={"action": {"hold": True}})

    t = threading.Thread(target=slow)
    t.start()
    try:
        assert env.entered.wait(30), "the slow step never started"
        busy_step = http.post(f"/sessions/{sid}/step", json={"action": {"sleep_s": 0.0}})
        busy_state = http.get(f"/sessions/{sid}/state")
    finally:
        env.gate.set()
    t.join(40)
    assert results["slow"].status_code == 200
    for r in (busy_step, busy_state):
        assert r.status_code == 409
        assert r.json()["error"]["code"] == "SESSION_BUSY"
        assert r.json()["error"]["applied"] is False
    assert http.get(f"/sessions/{sid}/state").json()["step_count"] == 1  # exactly one step ran
    http.close()


async def test_pipelined_requests_on_one_ws_session_get_busy_at_once(serve):
    env = held()
    server = serve(env)
    async with AsyncEnvClient(server.url) as client:
        await client.reset(session="a")
        await client.reset(session="b")
        conn = client._conn
        assert conn is not None
        # Three frames back to back: a held step on "a", a step on "a", a step on "b".
        for rid, key, hold in ((101, "a", "true"), (102, "a", "false"), (103, "b", "false")):
            await conn.send(f'{{"type":"step","id":{rid},"session":"{key}","data":{{"hold":{hold}}}}}')
        replies = {}
        try:  # 102 and 103 are answered while 101 is still held
            while len(replies) < 2:
                msg = orjson.loads(await conn.recv(30))
                replies[msg["id"]] = msg
        finally:
            env.gate.set()
        assert sorted(replies) == [102, 103]
        msg = orjson.loads(await conn.recv(30))
        replies[msg["id"]] = msg
    assert replies[102]["data"]["code"] == "SESSION_BUSY"
    assert replies[103]["type"] == "observation"
    assert replies[101]["type"] == "observation"


def test_busy_error_is_typed_on_the_client(serve):
    held_env = held()  # the step is held until the state call was refused (not a 0.5 s sleep)
    server = serve(held_env)
    with EnvClient(server.url) as env:
        env.reply_margin_s = -4.9  # give up after 0.1 s while the server allows 5 s
        env.reset()
        try:
            with pytest.raises(Exception, match="no reply"):
                env.step({"hold": True}, timeout_s=5.0)
            with pytest.raises(SessionBusy):
                env.state(timeout_s=5.0)
        finally:
            held_env.gate.set()
