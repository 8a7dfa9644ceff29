"""Sessions that attack the coding server itself, each on a real ``openenv serve coding``:
a worker or a grading child that stops reading its pipe (SIGSTOP) while the server
writes more than a pipe holds, a worker that floods its channel with stale frames, and
replies built to be slow to decode. The server answers ``/health`` throughout, the
attacker loses only its own session's state, and nothing the attack made is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psutil
import pytest
from _coding_fixtures import LEVELS, server_process
from _leftovers import Tracker, held_uids, threads
from coding_env import MODELS, CodeAction

from openenv import EnvClient

#: /health must answer within this (far under the seconds a stuck loop would take;
#: generous for a loaded 2-core machine).
HEALTH_S = 2.0

#: A cell whose worker stops itself (all its threads) just after it has answered.
STOP_AFTER_REPLY = (
    "import os, signal, threading, time\n"
    "threading.Thread(target=lambda: (time.sleep(0.3), os.kill(os.getpid(), signal.SIGSTOP)),"
    " daemon=True).start()"
)
#: A cell larger than any pipe holds (the worker is stopped, so it is never read).
BIG_CELL = "x = 1\n#" + "a" * 900_000

#: Makes a grading child stop itself once it has answered test 5's lookup, before test
#: 5's call (its arguments: about 100 kB, more than a pipe holds); a solution follows.
STOP_BEFORE_BIG_CALL_HOOK = """
import os, signal, sys
main = sys.modules["__main__"]
forks = [0]
os.register_at_fork(before=lambda: forks.__setitem__(0, forks[0] + 1))
send = main.Pipe.send
def send_then_stop(self, obj, *tag):
    send(self, obj, *tag)
    if forks[0] == 5 and "value" in obj:
        os.kill(os.getpid(), signal.SIGSTOP)
main.Pipe.send = send_then_stop
"""
#: A correct two_sum whose grading child stops before test 5's call.
STOP_BEFORE_BIG_CALL = STOP_BEFORE_BIG_CALL_HOOK + """
def two_sum(nums, target):
    seen = {}
    for j, x in enumerate(nums):
        if target - x in seen:
            return [seen[target - x], j]
        seen[x] = j
"""

Client = EnvClient[Any, Any, Any]


def health_s(url: str) -> float:
    """Seconds /health took (it must answer 200 within ``HEALTH_S``)."""
    start = time.monotonic()
    assert httpx.get(url + "/health", timeout=HEALTH_S).status_code == 200
    return time.monotonic() - start


@contextlib.contextmanager
def in_thread(fn: Any) -> Iterator[dict[str, Any]]:
    """Run ``fn`` on a thread; the dict gets its ``result`` or ``error``."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["result"] = fn()
        except BaseException as exc:  # reported to the test
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        yield out
    finally:
        thread.join(timeout=30)
        out["alive"] = thread.is_alive()


def wait_stopped(pid: int) -> None:
    """Until a process below ``pid`` (the test's own server) is stopped (SIGSTOP), 30 s at most."""
    for _ in range(600):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if child.status() == psutil.STATUS_STOPPED:
                    return
        time.sleep(0.05)
    pytest.fail("no process of the server stopped within 30 s")


def watch_health(url: str, seconds: float, tracker: Tracker | None = None) -> float:
    """Poll /health for ``seconds``; the slowest answer."""
    worst = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        worst = max(worst, health_s(url))
        if tracker is not None:
            tracker.look()
        time.sleep(0.1)
    return worst


@pytest.mark.slow
def test_a_worker_that_stops_reading_freezes_nothing() -> None:
    """A cell larger than a pipe, sent to a stopped worker: the write has a deadline
    (the cell's timeout plus grace), the session gets ``state_lost``, and the server's
    request deadline (which calls ``interrupt`` on the event loop) never waits on the
    stuck write. It used to freeze the whole server: /health, new connections, SIGTERM."""
    with server_process() as (proc, url), EnvClient(url, MODELS) as env:
        tracker = Tracker(proc.pid)
        env.reset(task_id="two_sum")
        env.step(CodeAction(code="kept = 1"))
        env.step(CodeAction(code=STOP_AFTER_REPLY))
        wait_stopped(proc.pid)  # the worker has stopped
        with in_thread(lambda: env.step(CodeAction(code=BIG_CELL), timeout_s=4)) as out:
            worst = watch_health(url, 6.0, tracker)  # past the request's 4 s deadline
        assert not out["alive"]
        assert "error" not in out, out.get("error")
        obs = out["result"].observation
        assert obs.state_lost
        assert obs.timed_out
        assert "stopped reading" in obs.exception.message
        assert env.step(CodeAction(code="1 + 1")).observation.result == "2"  # a fresh worker
        assert worst < HEALTH_S
        with EnvClient(url, MODELS) as other:  # new connections are served
            other.reset(task_id="two_sum")
        env.reset(task_id="two_sum")
        assert tracker.wait_clean(still_held=held_uids(proc.pid)) == []


@pytest.mark.slow
def test_a_grading_child_that_stops_reading_leaks_nothing() -> None:
    """The solution's test child stops before a call whose arguments fill its pipe:
    the write has the test's deadline, the test fails, the grading ends, and its
    thread and both sandboxes (the session's worker, the grading's) are given back
    when the session closes. They used to be held until the server stopped."""
    with server_process(test_timeout_s=2.0) as (proc, url):
        tracker = Tracker(proc.pid)
        for _ in range(2):  # honest episodes, graded: the baseline
            with EnvClient(url, MODELS) as env:
                env.reset(task_id="two_sum")
                env.step(CodeAction(code="x = 1"))
                env.step(CodeAction(code="def two_sum(nums, target): return [0, 1]", submit=True))
        time.sleep(1.0)
        base_threads = threads(proc.pid)
        with EnvClient(url, MODELS) as env:
            env.reset(task_id="two_sum")
            tracker.look()
            action = CodeAction(code=STOP_BEFORE_BIG_CALL, submit=True)
            with in_thread(lambda: env.step(action, timeout_s=60)) as out:
                worst = watch_health(url, 3.0, tracker)
            assert not out["alive"]
            assert "error" not in out, out.get("error")
            result = out["result"]
            assert result.done
            assert result.observation.metadata["reward_breakdown"]["test_5"] == 0.0
            assert result.reward == 0.8  # tests 1-4 pass; the stopped child fails test 5
        assert worst < HEALTH_S
        deadline = time.monotonic() + 20
        while threads(proc.pid) > base_threads and time.monotonic() < deadline:
            time.sleep(0.2)
        assert threads(proc.pid) <= base_threads
        assert tracker.wait_clean(still_held=held_uids(proc.pid)) == []


#: A cell that floods its worker's channel with 1 MiB frames no request asked for.
FLOOD = """
import gc, json, os, struct, threading, time
ch = next(o for o in gc.get_objects() if type(o).__name__ == "Channel" and hasattr(o, "wfd"))
body = json.dumps({"id": -1, "op": "result", "pad": "a" * (1 << 20)}).encode()
frame = struct.pack(">IQ", len(body), 1 << 40) + body
def flood():
    while True:
        os.write(ch.wfd, frame)
threading.Thread(target=flood, daemon=True).start()
time.sleep(1.0)
"""

#: A two_sum whose every reply is a set of ints sharing one hash (building it on the
#: server's side is quadratic: minutes holding the interpreter). 0.91 MiB: under the
#: grader's 1 MiB frame limit, so the hash bound is what stops it.
SLOW_SET = """
import sys
main = sys.modules["__main__"]
P = 2**61 - 1
def colliding(value, put):
    n = 30_000
    return ["E", n] + [t for k in range(1, n + 1) for t in ("I", str(k * P))]
main.encode = colliding
def two_sum(nums, target): return [0, 1]
"""

#: A two_sum whose reply is a set holding a tuple nested 125,000 deep (a million deep,
#: hashing it on the server's side overflowed the C stack: the server crashed). 0.95 MiB:
#: under the grader's 1 MiB frame limit, so the depth bound is what stops it.
DEEP_TUPLE = """
import sys
main = sys.modules["__main__"]
main.encode = lambda value, put: ["E", 1] + ["U", 1] * 125_000 + ["N"]
def two_sum(nums, target): return [0, 1]
"""

#: A solution that shows the test's inputs in its errors.
SHOW_INPUTS = "def two_sum(nums, target):\n    raise ValueError(f'inputs {nums!r} {target!r}')\n"


@pytest.mark.slow
def test_a_flooding_worker_is_cut_off_and_others_keep_their_pace() -> None:
    """Stale frames are skipped unread, and a worker that sends more than a few
    replies' worth of them is killed (its session gets ``state_lost``). Each frame
    used to be decoded by the server, slowing every other session."""
    with server_process() as (proc, url), EnvClient(url, MODELS) as env, EnvClient(url, MODELS) as victim:
        tracker = Tracker(proc.pid)
        env.reset(task_id="two_sum")
        victim.reset(task_id="two_sum")
        tracker.look()
        with in_thread(lambda: env.step(CodeAction(code=FLOOD), timeout_s=30)) as out:
            times = []
            for _ in range(30):
                t0 = time.monotonic()
                assert victim.step(CodeAction(code="1")).observation.result == "1"
                times.append(time.monotonic() - t0)
                tracker.look()
        assert "error" not in out, out.get("error")
        obs = out["result"].observation
        assert obs.state_lost
        assert "flooded" in obs.exception.message or "frame" in obs.exception.message
        times.sort()
        print(f"\nvictim step during the flood: p50 {times[15] * 1e3:.1f} ms, max {times[-1] * 1e3:.1f} ms")
        assert times[15] < 0.15  # 223 ms before the fix, about 1 ms unloaded
        assert env.step(CodeAction(code="2")).observation.result == "2"
        env.reset(task_id="two_sum")
        assert tracker.wait_clean(still_held=held_uids(proc.pid)) == []


@pytest.mark.slow
@pytest.mark.parametrize("solution", [SLOW_SET, DEEP_TUPLE], ids=["slow_set", "deep_tuple"])
def test_replies_built_to_be_slow_to_decode_stall_nothing(solution: str) -> None:
    """A reply is at most a few MiB, a decoded set refuses members that share one hash,
    and tuples nest at most 100 deep: the test fails, fast, and the server answers
    /health throughout. They used to stall every session (or crash the server)."""
    with server_process(test_timeout_s=2.0) as (proc, url), EnvClient(url, MODELS) as env:
        env.reset(task_id="two_sum")
        action = CodeAction(code=solution, submit=True)
        with in_thread(lambda: env.step(action, timeout_s=60)) as out:
            worst = watch_health(url, 3.0)
        assert "error" not in out, out.get("error")
        assert out["result"].reward == 0.0
        assert worst < HEALTH_S
        assert proc.poll() is None


@pytest.mark.slow
def test_the_observation_shows_hidden_tests_by_name_and_result_only() -> None:
    """A solution that raises with the test's inputs in the message: the agent sees
    test names and pass/fail, never the error lines (they used to show the inputs)."""
    with server_process() as (_, url), EnvClient(url, MODELS) as env:
        env.reset(task_id="two_sum")
        result = env.step(CodeAction(code=SHOW_INPUTS, submit=True))
        meta = result.observation.metadata
        assert meta["grade"]["tests"] == [{"name": f"test_{i}", "passed": False} for i in range(1, 6)]
        shown = repr(result.observation.model_dump())
        assert "inputs" not in shown
        assert "19997" not in shown  # test_5's target


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_the_next_server_reclaims_what_a_sigkilled_one_left(level: str) -> None:
    """A server killed with SIGKILL closes nothing: its sandboxes' directories, cgroups,
    mounts and (at the rlimits level) processes stay. The next coding server to start
    gives back every one whose uid no live process holds."""
    with server_process(level) as (proc, url), EnvClient(url, MODELS) as env:
        tracker = Tracker(proc.pid)
        env.reset(task_id="two_sum")
        env.step(CodeAction(code="import subprocess\nsubprocess.Popen(['sleep', '983'])\n1"))
        time.sleep(0.5)
        tracker.look()
        assert tracker.dirs
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert tracker.leftovers(still_held=set()) != []  # what the SIGKILL left
    with server_process(level):
        assert tracker.wait_clean(still_held=set(), timeout_s=10) == []


def test_decoding_work_is_bounded() -> None:
    """``openenv.rewards._plain.decode``: a set, frozenset or dict whose members share
    one hash past a few, and tuples nested past 100, are malformed values (refused in
    linear time); ordinary values of the same shapes decode."""
    from openenv.rewards._plain import MAX_HASHABLE_DEPTH, MAX_SHARED_HASH, decode, encode

    p = 2**61 - 1
    colliding = [k * p for k in range(1, 20_001)]
    for tag in ("E", "Z"):
        start = time.monotonic()
        with pytest.raises(ValueError, match="share one hash"):
            decode([tag, len(colliding)] + [t for k in colliding for t in ("I", str(k))])
        assert time.monotonic() - start < 5  # quadratic: a minute
    with pytest.raises(ValueError, match="share one hash"):
        decode(["D", len(colliding)] + [t for k in colliding for t in ("I", str(k), "N")])
    with pytest.raises(ValueError, match="nested"):
        decode(["U", 1] * (MAX_HASHABLE_DEPTH + 1) + ["N"])
    deep: object = None
    for _ in range(MAX_HASHABLE_DEPTH):
        deep = (deep,)
    ordinary = [set(range(10_000)), {-1, -2}, frozenset(colliding[:MAX_SHARED_HASH]), deep,
                {i: str(i) for i in range(1000)}, [[[[1]]]] * 3]
    for value in ordinary:
        assert decode(encode(value)) == value
    nested_lists = ["L", 1] * 5000 + ["N"]  # lists are never hashed: no depth bound
    assert decode(nested_lists) is not None
