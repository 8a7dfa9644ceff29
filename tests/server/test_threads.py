"""Lanes (openenv/server/_threads.py): the event loop starts no thread while it serves.

A thread's start can sleep in the kernel for as long as a cgroup move anywhere on the
host holds a lock every start takes (169 ms of the loop thread in the coding chaos
test), so sessions' own threads and ``interrupt()`` calls run on threads started
before and reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from openenv import DeadlineExceeded
from openenv._env import Execution
from openenv.core.env_server.interfaces import Environment as UpstreamEnvironment
from openenv.core.env_server.types import Action as UpstreamAction
from openenv.core.env_server.types import Observation as UpstreamObservation
from openenv.core.env_server.types import State as UpstreamState
from openenv.server._runner import EnvRunner
from openenv.server._threads import FRESH_SESSIONS, Lanes
from openenv.server._upstream_app import adapt

from .._envs import SyncTestEnv, TAction


@contextlib.contextmanager
def threads_started_here() -> Iterator[list[str]]:
    """The names of the threads this thread starts meanwhile (``Thread.start`` recorded)."""
    started: list[str] = []
    start = threading.Thread.start
    here = threading.get_ident()

    def recording(self: threading.Thread) -> None:
        if threading.get_ident() == here:
            started.append(self.name)
        start(self)

    threading.Thread.start = recording  # type: ignore[method-assign]
    try:
        yield started
    finally:
        threading.Thread.start = start  # type: ignore[method-assign]


def _wait(predicate, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def test_a_lane_runs_in_order_and_is_reused_once_given_back():
    lanes = Lanes("test-lane", max_idle=2)
    lane = lanes.take()
    seen: list[int] = []
    futures = [lane.submit(seen.append, i) for i in range(5)]
    assert [f.result(5) for f in futures] == [None] * 5
    assert seen == [0, 1, 2, 3, 4]
    ident = lane.submit(threading.get_ident).result(5)
    lane.shutdown(wait=False)
    with pytest.raises(RuntimeError):
        lane.submit(print)
    again = lanes.take()
    assert again.submit(threading.get_ident).result(5) == ident  # the same thread
    again.shutdown()


def test_a_lane_given_back_busy_is_reused_only_after_its_call():
    lanes = Lanes("test-lane", max_idle=2)
    lane = lanes.take()
    release = threading.Event()
    stuck = lane.submit(release.wait, 10)
    lane.shutdown(wait=False)
    other = lanes.take()  # not the busy one: a new thread
    assert other is not lane
    other.shutdown()
    assert lanes.idle == 1
    release.set()
    assert stuck.result(5) is True
    assert _wait(lambda: lanes.idle == 2)
    third = lanes.take()
    fourth = lanes.take()
    assert {third, fourth} == {lane, other}
    for each in (third, fourth):
        each.shutdown()


def test_idle_lanes_past_the_limit_end_their_threads():
    lanes = Lanes("test-lane-limit", max_idle=1)
    taken = [lanes.take() for _ in range(3)]
    threads = [lane._thread for lane in taken]
    for lane in taken:
        lane.shutdown()
    assert lanes.idle == 1
    assert _wait(lambda: sum(t.is_alive() for t in threads) == 1)


class Interruptible(SyncTestEnv):
    """A step that sleeps ``sleep_s`` unless interrupted."""

    execution = Execution.DEDICATED_THREAD
    reuse_session_thread = True

    def __init__(self) -> None:
        super().__init__()
        self.stop = threading.Event()

    def step(self, action: TAction) -> Any:
        self.stop.wait(action.sleep_s)
        return super().step(action.model_copy(update={"sleep_s": 0.0}))

    def interrupt(self) -> None:
        self.stop.set()


async def test_sessions_and_interrupts_start_no_thread_once_warm():
    """A second round of sessions, each with a call overrunning its deadline (an
    ``interrupt()``), starts no thread on the loop."""
    env = Interruptible
    runner = EnvRunner(env, env, slow_call_s=1, thread_workers=2, interrupt_grace_s=5)
    await runner.start()
    for round_ in range(2):  # the first round warms the lanes; the second is recorded
        with threads_started_here() if round_ else contextlib.nullcontext([]) as started:
            handles = [await runner.open() for _ in range(3)]
            for handle in handles:
                await handle.call("reset", None, seed=None, episode_id=None, options=None)
            overruns = [h.call("step", 0.05, TAction(sleep_s=10)) for h in handles]
            for outcome in await asyncio.gather(*overruns, return_exceptions=True):
                assert isinstance(outcome, DeadlineExceeded), outcome
                assert outcome.details["session_closed"] is False  # interrupted, on an interrupt lane
            await asyncio.gather(*(h.close() for h in handles))
            for _ in range(500):  # the lanes are given back by their threads
                if not any(getattr(h.own_thread, "_pending", 0) for h in handles):
                    break
                await asyncio.sleep(0.01)
    assert started == []  # the second round's
    await runner.stop()


def test_a_call_stuck_on_a_lane_does_not_hold_the_exit():
    """A session thread stuck in a call does not keep the process from exiting (a
    ThreadPoolExecutor's thread is joined at exit: a SIGTERM'd server waited for it)."""
    code = (
        "import time\nfrom openenv.server._threads import SESSIONS\n"
        "SESSIONS.take().submit(time.sleep, 60)\ntime.sleep(0.2)\nprint('done', flush=True)\n"
    )
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "done", out.stderr
    assert time.monotonic() - start < 20  # not the 60 s the call would take


def test_spare_lanes_are_kept_by_a_thread_of_their_own():
    """A burst of takes finds idle lanes: the spare ones, started again off the caller."""
    lanes = Lanes("test-lane-spare", max_idle=8, spare=2)
    lanes.prestart()
    assert lanes.idle == 2
    with threads_started_here() as started:
        taken = [lanes.take()]
        assert _wait(lambda: lanes.idle == 2)  # the spare thread made one more
        taken.append(lanes.take())
    assert started == []  # the caller started no thread
    for lane in taken:
        lane.shutdown()


def test_a_lane_that_must_not_be_reused_ends_its_thread_once_given_back():
    lanes = Lanes("test-lane-fresh", max_idle=2, spare=0, reuse=False)
    lanes.prestart(2)
    assert lanes.idle == 2  # never used: kept
    lane = lanes.take()
    thread = lane._thread
    assert lane.submit(threading.get_ident).result(5) == thread.ident
    lane.shutdown()
    assert lanes.idle == 1  # not given back to the stack
    assert _wait(lambda: not thread.is_alive())
    assert lanes.take() is not lane


#: What an upstream-style env left on its thread (a ``threading.local`` it never clears).
_LEFT = threading.local()


class _Observation(UpstreamObservation):
    found: str = ""


class _ThreadLocalEnv(UpstreamEnvironment):
    """Upstream-style and thread-affine (``REQUIRES_SINGLE_THREAD_EXECUTOR``): its reset
    keeps its episode id in a ``threading.local`` and reports what it found there."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    REQUIRES_SINGLE_THREAD_EXECUTOR = True

    def __init__(self) -> None:
        super().__init__()
        self._state = UpstreamState(episode_id="", step_count=0)

    def reset(self, seed: Any = None, episode_id: Any = None, **kwargs: Any) -> _Observation:
        found = getattr(_LEFT, "episode", "")
        _LEFT.episode = episode_id
        self._state = UpstreamState(episode_id=episode_id, step_count=0)
        return _Observation(found=found)

    def step(self, action: Any, timeout_s: Any = None, **kwargs: Any) -> _Observation:
        return _Observation()

    @property
    def state(self) -> UpstreamState:
        return self._state


async def test_an_env_that_leaves_thread_local_state_gets_a_thread_no_session_ran_on():
    """Sessions one after another of an upstream env keeping a ``threading.local``: none
    finds another's value (each runs on a thread of its own), and the event loop starts none of
    those threads (they are started ahead). Before, a closed session's thread served the
    next session with the value still there."""
    env = adapt(
        _ThreadLocalEnv, UpstreamAction, _Observation, UpstreamState, name="thread_local", max_sessions=None
    )
    assert env.execution is Execution.DEDICATED_THREAD
    assert not env.reuse_session_thread
    runner = EnvRunner(env, env, slow_call_s=1, thread_workers=2)
    await runner.start()
    seen: list[str] = []
    with threads_started_here() as started:
        for i in range(4):
            for _ in range(500):  # the spare lanes are made again off the loop
                if FRESH_SESSIONS.idle >= FRESH_SESSIONS.spare:
                    break
                await asyncio.sleep(0.01)
            handle = await runner.open()
            obs = await handle.call("reset", None, seed=None, episode_id=f"episode-{i}", options=None)
            seen.append(obs.found)
            await handle.close()
    await runner.stop()
    assert seen == [""] * 4
    assert started == []
