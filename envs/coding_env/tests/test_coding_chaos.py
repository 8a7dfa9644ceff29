"""Chaos on one ``openenv serve coding`` (issue 27, the coding half): many sessions at
once attack the server (workers stopped with a large cell on the way, replies slow to
decode, floods of stale frames, grading children that stop reading) while a victim
session steps and ``/health`` is polled.

Bounds (the issue's): victim step p99 <= 50 ms, every /health within 100 ms; afterwards
nothing the test made is left (threads, sandboxes, uids with processes, cgroups,
mounts); and SIGTERM in the middle of it ends the server within its graceful-shutdown
period (uvicorn's 5 s) plus one second. ``OPENENV_CHAOS_SESSIONS`` sets the number of
attacking sessions (default 32).

/health is polled from a process of its own at the server loop's priority
(``tests/_health_poller.py``), so its bound is the server's and holds whatever the load:
it is asserted always. The victim steps from a process of its own too, at the same
priority (``tests/_victim.py``; from this process, beside the attackers' 32 client threads, a
step also waited for this process's interpreter lock: p99 58.9 and 68.9 ms in 2 of 14
runs). Its p99 still measures the machine (its worker is a sandboxed process that waits
for a CPU like any other): the victim's steps with no attack, in the same process, come
first, and the p99 bound is asserted only when those show a quiet machine (else the
test skips, with the figures); a stall of 2 s or more fails it whatever the load.

What made /health slow (found with ``perf sched``): the event loop's thread asleep in
the kernel, uninterruptibly, starting a thread (169 ms) while a starved sandbox process
moved itself into a cgroup (a lock every thread start and exit on the host shares); see
docs/sandbox.md. The loop now starts no thread while it serves
(openenv/server/_threads.py), a sandbox joins its CPU cgroup last, and a killed one gets
CPU to die; the loop thread also runs first (openenv/server/_priority.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import Any

import httpx
import pytest
from _coding_fixtures import server_process
from _leftovers import Tracker, held_uids, threads
from coding_env import MODELS, CodeAction
from test_coding_hostile import BIG_CELL, FLOOD, SLOW_SET, STOP_AFTER_REPLY, STOP_BEFORE_BIG_CALL

from openenv import EnvClient
from tests._health_poller import health_polls
from tests._victim import victim_steps

SESSIONS = int(os.environ.get("OPENENV_CHAOS_SESSIONS", "32"))
VICTIM_P99_S = 0.050
HEALTH_S = 0.100
GRACE_S = 5.0  # uvicorn's timeout_graceful_shutdown in openenv serve
RUN_S = 10.0
STALL_S = 2.0  # any step or /health over this is a stall, however loaded the machine
QUIET_STEP_P99_S = 0.010  # the victim's p99 with no attack on a quiet machine is ~1-3 ms
QUIET_HEALTH_S = 0.050
#: The victim's bound is held where, with no attack, its p99 and /health were within the
#: two above and the host's load average at most this per core: the victim's slow steps
#: are its sandboxed worker waiting for a CPU (docs/sandbox.md), and at load 26 on 2
#: cores an idle p99 of 8.7-9.7 ms was seen beside 52-76 ms under the attacks.
QUIET_LOAD = 2.0

Client = EnvClient[Any, Any, Any]


def _attack(url: str, kind: int, stop: threading.Event, clients: list[Client]) -> None:
    """One attacking session, repeating its attack until ``stop``."""
    env: Client = EnvClient(url, MODELS)
    clients.append(env)
    try:
        while not stop.is_set():
            env.reset(task_id="two_sum")
            if kind == 0:  # a stopped worker, sent more than a pipe holds
                env.step(CodeAction(code=STOP_AFTER_REPLY))
                time.sleep(0.5)
                env.step(CodeAction(code=BIG_CELL), timeout_s=5)
            elif kind == 1:  # a reply slow to decode
                env.step(CodeAction(code=SLOW_SET, submit=True), timeout_s=60)
            elif kind == 2:  # a flood of stale frames
                env.step(CodeAction(code=FLOOD), timeout_s=30)
            else:  # a grading child that stops reading before a big call
                env.step(CodeAction(code=STOP_BEFORE_BIG_CALL, submit=True), timeout_s=60)
    except Exception:
        pass


def _honest(url: str) -> None:
    with EnvClient(url, MODELS) as env:
        env.reset(task_id="two_sum")
        env.step(CodeAction(code="1"))
        env.step(CodeAction(code="def two_sum(nums, target): return [0, 1]", submit=True))


def _start_attacks(url: str) -> tuple[threading.Event, list[threading.Thread], list[Client]]:
    stop = threading.Event()
    clients: list[Client] = []
    workers = [
        threading.Thread(target=_attack, args=(url, i % 4, stop, clients), daemon=True)
        for i in range(SESSIONS)
    ]
    for t in workers:
        t.start()
    return stop, workers, clients


def _stop_attacks(stop: threading.Event, workers: list[threading.Thread], clients: list[Client]) -> None:
    stop.set()
    for t in workers:
        t.join(timeout=90)
    for c in clients:
        with contextlib.suppress(Exception):  # a client of a stopped server
            c.close()


def _look(tracker: Tracker, stop: threading.Event) -> None:
    """Note the sandboxes the server holds, every 50 ms until ``stop``."""
    while not stop.wait(0.05):
        tracker.look()


def _idle_health(url: str, seconds: float) -> list[float]:
    """/health times with no attack, polled from this process."""
    health: list[float] = []
    end = time.monotonic() + seconds
    with httpx.Client(timeout=5) as http:
        while time.monotonic() < end:
            t0 = time.monotonic()
            http.get(url + "/health")
            health.append(time.monotonic() - t0)
            time.sleep(0.01)
    return health


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


@pytest.mark.slow
def test_chaos_victim_health_leftovers_and_sigterm(record_property: Any) -> None:
    with server_process(test_timeout_s=2.0, pool_size=4, max_steps=10**6) as (proc, url):
        tracker = Tracker(proc.pid)
        # The baseline: as many honest sessions at once (the server's thread pools grow
        # to their burst size and keep idle threads; that is not a leak).
        honest = [threading.Thread(target=_honest, args=(url,), daemon=True) for _ in range(SESSIONS + 1)]
        for t in honest:
            t.start()
        for t in honest:
            t.join(timeout=120)
        time.sleep(1.0)
        base_threads = threads(proc.pid)

        health: list[float] = []
        looking = threading.Event()
        looker = threading.Thread(target=_look, args=(tracker, looking), daemon=True)
        with victim_steps("coding", url) as victim:  # phases: no attack, attacks starting, under attack
            idle_health = _idle_health(url, 3.0)  # for the record: the machine's own noise
            idle_load = os.getloadavg()[0]
            looker.start()
            with health_polls(url, health):
                victim.mark()
                stop, workers, clients = _start_attacks(url)
                time.sleep(2.0)  # the attacks are under way
                victim.mark()
                time.sleep(RUN_S)
                victim.mark()
                _stop_attacks(stop, workers, clients)
        looking.set()
        looker.join(timeout=10)
        idle_steps, steps = victim.phases[0], victim.phases[2]

        p50, p99, worst_health = _pct(steps, 50), _pct(steps, 99), max(health)
        record_property("victim_p50_ms", round(p50 * 1e3, 2))
        record_property("victim_p99_ms", round(p99 * 1e3, 2))
        record_property("health_max_ms", round(worst_health * 1e3, 2))
        print(
            f"\nno attack, load {os.getloadavg()[0]:.1f}: victim p50 {_pct(idle_steps, 50) * 1e3:.1f} ms, "
            f"p99 {_pct(idle_steps, 99) * 1e3:.1f} ms; /health p50 {_pct(idle_health, 50) * 1e3:.1f} ms, "
            f"max {max(idle_health) * 1e3:.1f} ms"
        )
        print(
            f"{SESSIONS} attacking sessions, {os.cpu_count()} cores: victim {len(steps)} steps, "
            f"p50 {p50 * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, max {max(steps) * 1e3:.1f} ms "
            f"({sum(s > VICTIM_P99_S for s in steps)} over {VICTIM_P99_S * 1e3:g}); /health "
            f"{len(health)} polls, p50 {_pct(health, 50) * 1e3:.1f} ms, max {worst_health * 1e3:.1f} ms"
        )

        deadline = time.monotonic() + 30
        while threads(proc.pid) > base_threads and time.monotonic() < deadline:
            time.sleep(0.2)
        left_threads = threads(proc.pid) - base_threads
        leftovers = tracker.wait_clean(still_held=held_uids(proc.pid))

        # SIGTERM in the middle of the same attacks.
        stop, workers, clients = _start_attacks(url)
        time.sleep(3.0)
        tracker.look()
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=GRACE_S + 1.0 + 10)
            exit_s = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            exit_s = float("inf")
        record_property("sigterm_exit_s", round(exit_s, 3))
        print(f"SIGTERM under attack: exit in {exit_s:.2f} s")
        _stop_attacks(stop, workers, clients)
        after_exit = tracker.wait_clean(still_held=set())

        assert left_threads <= 0, f"{left_threads} threads more than before the attacks"
        assert leftovers == []
        assert after_exit == []
        assert exit_s <= GRACE_S + 1.0
        # Always: no stall (before the fixes one session froze the server for good, and a
        # slow-to-decode reply stalled every session for 89 s).
        assert max(steps) < STALL_S
        # The server's /health, measured from outside this process (see the docstring):
        # 2026-11-27, two CI suites on the same 2 cores (load 16-32), 9 runs: max 13-62
        # ms; 17 ms with 6 busy loops added (load 34). It was 108 and 228 ms in 2 of 7
        # quiet runs before the loop stopped starting threads.
        assert worst_health <= HEALTH_S, (
            f"/health took up to {worst_health * 1e3:.1f} ms (bound {HEALTH_S * 1e3:g}); "
            f"load {os.getloadavg()}"
        )
        # The victim's bound holds the server to account only where the machine itself is
        # quiet: its worker and the server's threads share 2 cores with every other job.
        idle_p99, idle_health_max = _pct(idle_steps, 99), max(idle_health)
        quiet_load = QUIET_LOAD * (os.cpu_count() or 1)
        if idle_p99 > QUIET_STEP_P99_S or idle_health_max > QUIET_HEALTH_S or idle_load > quiet_load:
            pytest.skip(
                f"the machine is too loaded to hold a latency bound: with no attack the victim's "
                f"p99 was {idle_p99 * 1e3:.1f} ms and /health took up to {idle_health_max * 1e3:.1f} ms "
                f"at load {idle_load:.1f} (quiet: {QUIET_STEP_P99_S * 1e3:g} and "
                f"{QUIET_HEALTH_S * 1e3:g} ms, load {quiet_load:g}); under attack "
                f"p99 {p99 * 1e3:.1f} ms, /health max {worst_health * 1e3:.1f} ms; load {os.getloadavg()}"
            )
        # The victim's p99 holds since each session's sandbox gets its CPU weight from its
        # recent use (openenv/sandbox/_fairness.py): in alternating runs on the shared
        # 2-core machine (2026-11-27, load 10-35 from other jobs), p99 13-32 ms with the
        # policy (8 runs) against 30-49 ms without it (5 runs; 55-89 ms earlier that hour),
        # and the victim took 1.5-3x as many steps.
        assert p99 <= VICTIM_P99_S, (
            f"victim p99 {p99 * 1e3:.1f} ms (bound {VICTIM_P99_S * 1e3:g}); load {os.getloadavg()}"
        )
