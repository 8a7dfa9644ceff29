"""Chaos on a real ``openenv serve terminal``: many sessions whose shells stop themselves
and are fed long commands, others flooding their terminals with output, while a victim
session steps and ``/health`` is polled. Every ``/health`` answers within 100 ms
throughout, whatever the load, less what the server's loop waited for a CPU meanwhile
(the host's doing; the poller reads it from the kernel's schedstat): the loop never
waits on a session (it reads a terminal only on an edge, one read that finds input;
a terminal that streams or floods goes to the pump thread; shells start off the loop:
``terminal_env._ptyio``); the victim's p99 step stays under 50 ms where the machine
itself is quiet enough (see
``QUIET_STEP_P99_MS``); no step ever stalls 2 s. /health is polled and the victim steps
from processes of their own at the server loop's priority (``tests/_health_poller.py``,
``tests/_victim.py``), so what they measure is the server, not this process and its
attackers' clients. Afterwards nothing the test made is
left: no process of the server's tree, no sandbox directory, mount or cgroup, no uid
lease, while the server runs and after it stops.

The server runs with no pool of ready shells (``pool_size`` 0), so every sandbox it
makes is a session's, and each is found by its uid while the session holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from _terminal_fixtures import LEVELS, served
from terminal_env import MODELS, RunAction

from openenv import AsyncEnvClient
from openenv.sandbox._cgroup import cgroup_host
from openenv.sandbox._sandbox import default_root
from tests._health_poller import health_polls
from tests._victim import victim_steps

pytestmark = pytest.mark.timeout(240)

STOPPED, FLOODING = 8, 4
CHAOS_S = 8.0
LONG = "echo " + "x" * 200_000 + " | wc -c"
STEP_P99_MS, HEALTH_MAX_MS = 50.0, 100.0
#: The victim's p99 is checked where the same victim, measured just before the chaos, is
#: well inside it and the host's load average was at most ``QUIET_LOAD`` per core then:
#: on a machine loaded by others (a load average of 20 on 2 cores was seen here, the idle
#: p99 at 45-93 ms) it measures the machine. (An idle p99 of 8.6 ms at load 31 was seen
#: once, then 92 ms under the chaos: the victim's shell waited for a CPU.) Stepped from
#: this process beside the attackers' tasks, two full suites at once (load about 1.5-2 a
#: core before the chaos) gave 55 and 62 ms. From a process of its own (``tests/_victim.py``)
#: on 2 cores: 13.8-20.0 ms at load 1.8-2.7 (asserted), 10.7-23.0 ms at load 3.9-5.8,
#: 31.7-39.8 ms at load 8-9 (the old victim 49.4 and 123.1 ms in those minutes), 55-131 ms
#: at load 11-13; and 72.6 ms once after a load of 1.3, while other jobs were starting.
#: So 2 a core, as the coding chaos test's gate.
QUIET_STEP_P99_MS, QUIET_LOAD = 10.0, 2.0
STALL_S = 2.0


def client(server: Any) -> AsyncEnvClient[Any, Any, Any]:
    return AsyncEnvClient(server.base_url, MODELS, timeout_s=60)


async def sh(env: AsyncEnvClient[Any, Any, Any], command: str, timeout_s: float = 10) -> Any:
    return (await env.step(RunAction(command=command, timeout_s=timeout_s))).observation


async def sandbox_of(env: AsyncEnvClient[Any, Any, Any]) -> str:
    return sandbox_named(int((await sh(env, "id -u")).output))


def sandbox_named(uid: int) -> str:
    """The name of the sandbox directory (``u<uid>-<id>``) of the session with uid ``uid``:
    it is leased to that session alone while it lives, so one directory of the shared
    root has it."""
    names = [p.name for p in default_root().glob(f"u{uid}-*")]
    assert len(names) == 1, names
    return names[0]


async def stop_and_feed(env: AsyncEnvClient[Any, Any, Any], until: float) -> int:
    """Stop the shell, feed it a long command it cannot take (a restart), again."""
    stalls = 0
    for _ in range(50):
        if time.monotonic() > until:
            break
        await sh(env, "(sleep 0.2; kill -STOP $$) >/dev/null 2>&1 &")
        await asyncio.sleep(0.4)
        obs = (await env.step(RunAction(command=LONG, timeout_s=1))).observation
        stalls += obs.timed_out and obs.session_restarted
    return stalls


async def flood(env: AsyncEnvClient[Any, Any, Any], until: float) -> int:
    """Endless output, cut by the timeout's Ctrl-C, again."""
    floods = 0
    for _ in range(50):
        if time.monotonic() > until:
            break
        floods += (await sh(env, "yes $(seq 1000)", timeout_s=1)).timed_out
    return floods


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def leftovers(server_pid: int | None, names: list[str]) -> list[str]:
    """What is left of the test's sandboxes (and, with ``server_pid``, of the server's
    process tree and uid leases)."""
    left = []
    root = default_root()
    mounts = Path("/proc/self/mountinfo").read_text()
    host, _ = cgroup_host()
    for name in names:
        if (root / name).exists():
            left.append(f"directory {root / name}")
        if f"/{name} " in mounts:
            left.append(f"mount of {name}")
        cgroups = [*host.dirs(name), *([host.cpuset / name] if host.cpuset else [])] if host else []
        left += [f"cgroup {path}" for path in cgroups if path.exists()]
    if server_pid is not None:
        for child in psutil.Process(server_pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):  # gone meanwhile: not left
                left.append(f"process {child.pid} {child.cmdline()}")
        inodes = {os.stat(root / ".uids" / f"{name[1:].split('-')[0]}.lock").st_ino for name in names}
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            held = len(fields) > 5 and fields[4] == str(server_pid)
            if held and int(fields[5].rsplit(":", 1)[1]) in inodes:
                left.append(f"uid lease {line}")
    return left


async def gone(server_pid: int | None, names: list[str]) -> list[str]:
    """Leftovers, waited for up to 15 s (sessions are torn down in the background)."""
    for _ in range(150):
        left = await asyncio.to_thread(leftovers, server_pid, names)
        if not left:
            break
        await asyncio.sleep(0.1)
    return left


async def test_stopped_shells_and_floods_leave_the_victim_and_health_fast() -> None:
    with served(LEVELS[-1], OPENENV_ENV_KWARGS='{"pool_size": 0}') as server:
        names, steps, health, counts, left, (idle_steps, idle_load) = await _chaos(server)
        pid = server.proc.pid
    left_after_stop = await gone(None, names)
    step_p99, health_max = p99(steps) * 1000, max(s for s, _ in health) * 1000
    own_max = max(s - queued for s, queued in health) * 1000  # less the loop's waits for a CPU
    print(
        f"\nchaos: {len(steps)} victim steps, p99 {step_p99:.1f} ms (max {max(steps) * 1000:.1f}); "
        f"/health max {health_max:.1f} ms, less the loop's waits for a CPU {own_max:.1f} ms (p99 "
        f"{p99([s for s, _ in health]) * 1000:.1f}); stalls, floods {counts}; "
        f"before the chaos: {len(idle_steps)} steps, p99 {p99(idle_steps) * 1000:.1f} ms at load "
        f"{idle_load:.2f}; load {os.getloadavg()}"
    )
    assert sum(counts[:STOPPED]) >= STOPPED  # each stopped shell stalled a command at least once
    assert sum(counts[STOPPED:]) >= FLOODING
    assert left == []  # with the server running: its sessions closed
    assert left_after_stop == []
    assert not psutil.pid_exists(pid)
    # Always: no stall (one was 5 s for /health and 38 s for a step when the PTY write
    # slept on the event loop); a loaded machine's worst seen here was 0.47 s.
    assert max(steps) < STALL_S
    assert health_max < STALL_S * 1000
    # Whatever the load, each poll less the time the server's loop thread waited runnable
    # for a CPU meanwhile (what the host's load costs it, at nice -10: up to 77 ms at a
    # time at load 11, perf sched). Before the pump (the loop polled and read the
    # terminals, and forked the shells) the worst raw poll was 61-253 ms at load 14-18
    # (two CI suites beside), 41-190 ms in 7 runs at load 14-34 (CPU hogs and cgroup
    # moves beside); after, 27-64 ms in 13 of 14 runs at load 11-39, 140 ms in one. So
    # the bound is relaxed to twice as much where the host was loaded before the chaos
    # (past QUIET_LOAD a core): the pre-pump figures stay out of reach of a quiet host.
    loaded = idle_load > QUIET_LOAD * (os.cpu_count() or 1)
    health_bound = HEALTH_MAX_MS * (2 if loaded else 1)
    assert own_max <= health_bound, (
        f"/health took {own_max:.1f} ms of its own (bound {health_bound:g} ms, load before the chaos "
        f"{idle_load:.1f}); load {os.getloadavg()}"
    )
    idle_p99 = p99(idle_steps) * 1000
    if idle_p99 > QUIET_STEP_P99_MS or loaded:
        pytest.skip(
            f"/health held; the machine is too loaded to hold the victim's p99: before the chaos "
            f"it was {idle_p99:.1f} ms at load {idle_load:.1f} (quiet: {QUIET_STEP_P99_MS:g} ms, "
            f"load {QUIET_LOAD:g} a core); load now {os.getloadavg()}"
        )
    assert step_p99 <= STEP_P99_MS


Idle = tuple[list[float], float]


async def _chaos(
    server: Any,
) -> tuple[list[str], list[float], list[tuple[float, float]], list[int], list[str], Idle]:
    stopped = [client(server) for _ in range(STOPPED)]
    flooding = [client(server) for _ in range(FLOODING)]
    everyone = [*stopped, *flooding]
    names: list[str] = []
    try:
        await asyncio.gather(*(env.reset(free_shell=True) for env in everyone))
        names = list(await asyncio.gather(*(sandbox_of(env) for env in everyone)))
        health: list[float] = []
        queued: list[float] = []
        # The victim's phases: warming up, no chaos, the chaos, after. It tells its uid.
        with victim_steps("terminal", server.base_url) as calm:
            names.append(sandbox_named(int(calm.hello)))
            await asyncio.sleep(0.5)
            calm.mark()
            await asyncio.sleep(2.0)
            idle_load = os.getloadavg()[0]
            with health_polls(server.base_url, health, server_pid=server.proc.pid, waits=queued):
                calm.mark()
                until = time.monotonic() + CHAOS_S
                counts = list(
                    await asyncio.gather(
                        *(stop_and_feed(env, until) for env in stopped),
                        *(flood(env, until) for env in flooding),
                    )
                )
                calm.mark()  # the chaos is over
    finally:
        await asyncio.gather(*(env.close() for env in everyone), return_exceptions=True)
    idle_steps, steps = calm.phases[1], calm.phases[2]
    polls = list(zip(health, queued, strict=True))
    return names, steps, polls, counts, await gone(server.proc.pid, names), (idle_steps, idle_load)
