"""Where env code runs: inline on the loop, on worker threads, on a dedicated thread."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from openenv import EnvClient
from openenv._env import Execution
from openenv.server._runner import (
    DEMOTE_AT_ONCE,
    DEMOTE_STRIKES,
    PROMOTE_AFTER,
    PROMOTE_BACKOFF,
    STRIKE_FORGIVEN,
    EnvRunner,
)

from .._envs import MODELS, TAction, make_env
from .._wire import call, connect
from ..conftest import wait_until


def episode(server, steps: int = 2, session: str | None = None, ws=None):
    """Reset, step and state over one connection; returns the tracker's instance number."""
    own = ws is None
    ws = ws or connect(server.ws_url, extended=True)
    extra = {"session": session} if session else {}
    no = call(ws, {"type": "reset", **extra})["data"]["observation"]["instance"]
    for _ in range(steps):
        call(ws, {"type": "step", "data": {}, **extra})
    call(ws, {"type": "state", **extra})
    if own:
        ws.close()
    return no


def test_inline_env_runs_on_the_loop_thread_with_no_hop(serve):
    server = serve(make_env(execution=Execution.INLINE))
    with EnvClient(server.url, MODELS) as env:
        reset = env.reset()
        step = env.step(TAction())
        state = env.state()
    loop = server.loop_thread
    assert reset.observation.thread == loop
    assert step.observation.thread == loop
    assert state.thread == loop
    tracker = server.tracker
    assert tracker.threads("reset") == tracker.threads("step") == tracker.threads("state") == {loop}
    # INLINE promises nothing blocks: construction and close stay on the loop too
    server.wait_closes([1])
    assert tracker.threads("init") == tracker.threads("close") == {loop}


def test_thread_env_runs_on_worker_threads(serve):
    server = serve(make_env(execution=Execution.THREAD))
    episode(server)
    tracker = server.tracker
    used = tracker.threads("reset") | tracker.threads("step") | tracker.threads("state")
    assert server.loop_thread not in used
    assert all(tracker.names[t].startswith("openenv-env") for t in used)


def test_thread_env_calls_overlap_across_sessions(serve):
    # each step waits at a barrier the other three must reach: all four reply only if they overlap
    server = serve(make_env(execution=Execution.THREAD, step_barrier=threading.Barrier(4)))
    conns = [connect(server.ws_url) for _ in range(4)]
    try:
        for ws in conns:
            call(ws, {"type": "reset"})
        for ws in conns:
            ws.send('{"type": "step", "data": {"message": "meet"}}')
        for ws in conns:
            reply = ws.recv(timeout=40)
            assert '"observation"' in reply, f"the steps did not overlap: {reply}"
    finally:
        for ws in conns:
            ws.close()
    assert len(server.tracker.threads("step")) == 4


def test_dedicated_thread_env_keeps_one_thread_per_session(serve):
    server = serve(make_env(execution=Execution.DEDICATED_THREAD))
    with connect(server.ws_url, extended=True) as ws:
        first = episode(server, session="a", ws=ws)
        second = episode(server, session="b", ws=ws)
        call(ws, {"type": "step", "session": "a", "data": {}})
    server.wait_closes([1, 1])
    tracker = server.tracker
    threads = {}
    for no in (first, second):
        used = {what: tracker.threads(what, no) for what in ("init", "reset", "step", "state", "close")}
        assert all(len(t) == 1 for t in used.values()), used
        (thread,) = used["init"]
        assert all(t == {thread} for t in used.values()), used
        assert thread != server.loop_thread
        assert tracker.names[thread].startswith("openenv-session")
        threads[no] = thread
    assert threads[first] != threads[second]


def test_dedicated_thread_survives_env_errors(serve):
    server = serve(make_env(execution=Execution.DEDICATED_THREAD))
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        assert call(ws, {"type": "step", "data": {"fail": "x"}})["data"]["code"] == "EXECUTION_ERROR"
        ok = call(ws, {"type": "step", "data": {}})
    assert ok["data"]["observation"]["thread"] in server.tracker.threads("init")


def test_auto_env_runs_off_the_loop_until_proven_fast(serve):
    server = serve(make_env(execution=Execution.AUTO), slow_call_s=5.0)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        threads = [env.step(TAction()).observation.thread for _ in range(PROMOTE_AFTER + 2)]
    loop = server.loop_thread
    # The first calls are measured on worker threads; once proven fast, step runs inline.
    assert loop not in threads[:PROMOTE_AFTER]
    assert threads[-1] == loop
    assert server.manager.runner.execution is Execution.AUTO


def test_auto_env_slow_first_call_never_blocks_the_loop(serve):
    gate = threading.Event()
    server = serve(make_env(execution=Execution.AUTO, step_gate=gate), slow_call_s=0.05)
    with connect(server.ws_url) as slow, connect(server.ws_url) as fast:
        call(slow, {"type": "reset"})
        call(fast, {"type": "reset"})
        slow.send('{"type": "step", "data": {"message": "hold"}}')
        wait_until(lambda: server.tracker.count("held"), timeout_s=30, what="the slow step to start")
        try:  # the other session keeps stepping while the slow call is held
            for _ in range(2 * PROMOTE_AFTER):
                assert call(fast, {"type": "step", "data": {}})["type"] == "observation"
        finally:
            gate.set()
        reply = json.loads(slow.recv(timeout=10))
    assert reply["data"]["observation"]["thread"] != server.loop_thread


def test_auto_env_method_slow_on_the_loop_goes_back_to_threads(serve, caplog):
    # slow_call_s 0.1: a fast step preempted on a loaded host stays under it (8 in a row
    # promote it); a slow one (0.25 s) is 2.5x it, and 2.25 s under being demoted at once
    # (DEMOTE_AT_ONCE, 25x).
    server = serve(make_env(execution=Execution.AUTO), slow_call_s=0.1)
    with caplog.at_level(logging.WARNING, logger="openenv.server"), EnvClient(server.url, MODELS) as env:
        env.reset()
        for _ in range(PROMOTE_AFTER):
            env.step(TAction())
        assert env.step(TAction()).observation.thread == server.loop_thread
        # Slow on the loop, but not so slow as to be demoted at once: one strike each.
        slow = [env.step(TAction(sleep_s=0.25)).observation.thread for _ in range(int(DEMOTE_STRIKES))]
        assert slow == [server.loop_thread] * int(DEMOTE_STRIKES)
        after = [env.step(TAction()).observation.thread for _ in range(PROMOTE_AFTER * PROMOTE_BACKOFF - 1)]
    assert server.loop_thread not in after  # demoted, and not yet proven fast again
    assert server.tracker.names[after[-1]].startswith("openenv-env")
    assert any("worker threads" in r.getMessage() for r in caplog.records)


def test_auto_env_is_built_and_closed_off_the_loop_even_once_promoted(serve):
    server = serve(make_env(execution=Execution.AUTO), slow_call_s=5.0)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        for _ in range(PROMOTE_AFTER + 1):
            env.step(TAction())
        assert server.manager.runner.runs_on_loop("step")
    server.wait_closes([1])
    tracker = server.tracker
    assert server.loop_thread not in tracker.threads("close")  # an AUTO close may block
    assert server.loop_thread not in tracker.threads("init")


@pytest.mark.parametrize("execution", [Execution.INLINE, Execution.THREAD])
def test_explicit_execution_is_never_demoted(serve, execution):
    server = serve(make_env(execution=execution), slow_call_s=0.01)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        env.step(TAction(sleep_s=0.05))
        thread = env.step(TAction()).observation.thread
    assert server.manager.runner.execution is execution
    assert (thread == server.loop_thread) is (execution is Execution.INLINE)


def test_async_env_runs_on_the_loop(serve):
    server = serve(make_env("async"))
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        step = env.step(TAction())
        state = env.state()
    server.wait_closes([1])
    loop = server.loop_thread
    assert step.observation.thread == state.thread == loop
    tracker = server.tracker
    for what in ("init", "reset", "step", "state", "close"):
        assert tracker.threads(what) == {loop}, what
    assert server.manager.runner.is_async


def test_async_env_slow_calls_do_not_block_other_sessions(serve):
    gate = threading.Event()
    server = serve(make_env("async", step_gate=gate))
    with connect(server.ws_url) as slow, connect(server.ws_url) as fast:
        call(slow, {"type": "reset"})
        call(fast, {"type": "reset"})
        slow.send('{"type": "step", "data": {"message": "hold"}}')
        wait_until(lambda: server.tracker.count("held"), timeout_s=30, what="the slow step to start")
        try:
            assert call(fast, {"type": "step", "data": {}})["type"] == "observation"  # slow still held
        finally:
            gate.set()
        assert '"observation"' in slow.recv(timeout=10)


# --- EnvRunner / EnvHandle units -------------------------------------------------------------------


def test_runner_policy_flags():
    sync_auto = EnvRunner(make_env(execution=Execution.AUTO), lambda: None, slow_call_s=1, thread_workers=1)
    assert sync_auto.execution is Execution.AUTO
    assert not sync_auto.is_async
    for _ in range(PROMOTE_AFTER):
        assert not sync_auto.runs_on_loop("step")
        sync_auto._record("step", 0.001, on_loop=False)
    assert sync_auto.runs_on_loop("step")
    assert not sync_auto.runs_on_loop("reset")
    sync_auto._record("step", DEMOTE_AT_ONCE + 1.0, on_loop=True)  # demoted at once
    assert not sync_auto.runs_on_loop("step")
    for _ in range(PROMOTE_AFTER * PROMOTE_BACKOFF - 1):
        sync_auto._record("step", 0.001, on_loop=False)
    assert not sync_auto.runs_on_loop("step")  # demoted once: promoted after 4x as many
    sync_auto._record("step", 0.001, on_loop=False)
    assert sync_auto.runs_on_loop("step")
    sync_thread = EnvRunner(make_env(), lambda: None, slow_call_s=1, thread_workers=1)
    for _ in range(PROMOTE_AFTER):
        sync_thread._record("step", 0.001, on_loop=False)
    assert not sync_thread.runs_on_loop("step")
    async_runner = EnvRunner(make_env("async"), lambda: None, slow_call_s=1, thread_workers=1)
    assert async_runner.is_async
    assert async_runner.execution is Execution.INLINE


def _promoted(slow_call_s: float = 0.01) -> EnvRunner:
    runner = EnvRunner(
        make_env(execution=Execution.AUTO), lambda: None, slow_call_s=slow_call_s, thread_workers=1
    )
    for _ in range(PROMOTE_AFTER):
        runner._record("step", 0.001, on_loop=False)
    assert runner.runs_on_loop("step")
    return runner


def test_one_stall_on_the_loop_is_a_strike_not_a_demotion():
    # A fast method slow once by the clock (the process was preempted, a GC ran) stays on
    # the loop; strikes wear off with fast calls, so rare stalls never add up.
    runner = _promoted()
    for _ in range(int(DEMOTE_STRIKES) * 4):
        runner._record("step", 0.05, on_loop=True)  # 5x over slow_call_s: a strike
        for _ in range(int(1 / STRIKE_FORGIVEN)):
            runner._record("step", 0.001, on_loop=True)
        assert runner.runs_on_loop("step")
    assert "step" not in runner._strikes  # every strike forgiven


def test_strikes_close_together_demote():
    runner = _promoted()
    for _ in range(int(DEMOTE_STRIKES) - 1):
        runner._record("step", 0.05, on_loop=True)
        runner._record("step", 0.001, on_loop=True)
        assert runner.runs_on_loop("step")
    runner._record("step", 0.05, on_loop=True)
    assert not runner.runs_on_loop("step")


def test_one_very_slow_call_on_the_loop_demotes_at_once(caplog):
    runner = _promoted(slow_call_s=0.01)
    runner._record("step", 0.01 * DEMOTE_AT_ONCE * 0.9, on_loop=True)
    assert runner.runs_on_loop("step")
    with caplog.at_level(logging.WARNING, logger="openenv.server"):
        runner._record("step", 0.01 * DEMOTE_AT_ONCE * 1.1, on_loop=True)
    assert not runner.runs_on_loop("step")
    assert "runs on worker threads again" in caplog.text


def test_each_demotion_asks_for_more_fast_calls_before_the_next_promotion():
    runner = _promoted()
    needed = PROMOTE_AFTER
    for _ in range(3):
        runner._record("step", 1.0, on_loop=True)  # demoted at once
        needed *= PROMOTE_BACKOFF
        for _ in range(needed - 1):
            runner._record("step", 0.001, on_loop=False)
        runner._record("step", 0.05, on_loop=False)  # slow off the loop: the count restarts
        assert not runner.runs_on_loop("step")
        for _ in range(needed):
            runner._record("step", 0.001, on_loop=False)
        assert runner.runs_on_loop("step")


async def test_pool_is_created_lazily_and_shut_down():
    runner = EnvRunner(make_env(), lambda: None, slow_call_s=1, thread_workers=2)
    assert runner._pool is None
    await runner.stop()  # nothing to do
    pool = runner.pool
    assert runner.pool is pool
    await runner.stop()
    with pytest.raises(RuntimeError):
        pool.submit(print)


@pytest.mark.parametrize("execution", list(Execution))
async def test_handle_close_never_raises(execution, caplog):
    env = make_env(execution=execution)

    def bad_close(self):
        raise OSError("cannot close")

    env.close = bad_close
    runner = EnvRunner(env, env, slow_call_s=1, thread_workers=2)
    handle = await runner.open()
    with caplog.at_level(logging.ERROR, logger="openenv.server"):
        await handle.close()
    assert any("closing" in r.getMessage() for r in caplog.records)
    await runner.stop()


async def test_dedicated_thread_is_released_after_close():
    env = make_env(execution=Execution.DEDICATED_THREAD)
    runner = EnvRunner(env, env, slow_call_s=1, thread_workers=2)
    handle = await runner.open()
    assert handle.own_thread is not None
    await handle.call("reset", None, seed=None, episode_id=None, options=None)
    await handle.close()
    with pytest.raises(RuntimeError):
        handle.own_thread.submit(print)
    assert env.tracker.close_counts() == [1]


@pytest.mark.parametrize("reuse", [True, False], ids=["reused-lanes", "fresh-lanes"])
async def test_dedicated_thread_failing_constructor_gives_its_thread_back(reuse: bool, monkeypatch):
    """A session whose env fails to build gives its lane back: a reusable lane goes idle
    and serves the next open; a fresh one (an env that does not say its thread may be
    reused) ends. Either way three failed opens leave no thread behind.

    Only the lanes this test's opens took are looked at (recorded at ``take``): other
    tests' sessions in this process start and end lanes of the same name meanwhile (a
    count of every such thread saw one of theirs end: "0 == 1" with two suites at once)."""
    import asyncio

    from openenv.server._threads import FRESH_SESSIONS, SESSIONS

    lanes = SESSIONS if reuse else FRESH_SESSIONS
    lanes.prestart()  # as a server's start does: its spares, and the thread that keeps them
    env = make_env(execution=Execution.DEDICATED_THREAD, fail_on_init=True, reuse_session_thread=reuse)
    runner = EnvRunner(env, env, slow_call_s=1, thread_workers=2)
    taken: list[Any] = []
    take = lanes.take

    def recording() -> Any:
        taken.append(take())
        return taken[-1]

    monkeypatch.setattr(lanes, "take", recording)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="cannot build"):
            await runner.open()
    monkeypatch.undo()
    assert len(taken) == 3

    def kept() -> list[Any]:
        """Taken lanes neither idle (reused) nor ended (fresh)."""
        with lanes.lock:
            idle = list(lanes._idle)
        if reuse:
            return [lane for lane in taken if lane not in idle and lane._thread.is_alive()]
        return [lane for lane in taken if lane._thread.is_alive()]

    for _ in range(500):  # an ended lane's thread goes a moment after it ended
        if not kept():
            break
        await asyncio.sleep(0.01)
    assert kept() == []  # nothing kept: each lane went idle or ended
