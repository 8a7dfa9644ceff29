"""The resource suite (issue 19): one session's load, at the sizes the issue names, stays
inside that session's kernel limits while a second session (B) steps meanwhile.

Real servers (``openenv serve terminal|coding --session-limits ...``) on 127.0.0.1, at
every sandbox level this machine supports, under real cgroups and a real tmpfs:

* six processes of 1.5 GiB in one session stay under its 2 GiB memory limit (the OOM
  killer ends some of them, in that session only);
* writing 6 GiB stops at the session's 512 MiB disk limit (``ENOSPC``), the host's disk
  untouched;
* four busy loops in one session are held to its one-core quota (the cgroup's CPU
  counter) and, where sessions are pinned, to its own core (every process's affinity;
  B's core is another), and on a quiet host (``tests/_quiet.py``) B's p99 step stays
  under 200 ms (the ratio to B's idle p99 is recorded and printed, a benchmark figure:
  ``docs/benchmarks.md``);
* 40 coding sessions blocked in their cells leave a 41st session stepping while they
  are blocked (its steps ran before they ended), its p99 under 50 ms on a quiet host
  (``envs/coding_env/tests/test_coding_fairness.py`` checks the order of the same case);
* 2,000 session creations from one client stop at its quota while another client
  (another loopback address) still gets a session.

B's p99 before, during and after each load is printed and written to
``$TMPDIR/openenv-resource-suite.json`` (figures: ``docs/benchmarks.md``).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from coding_env import MODELS as CODING_MODELS
from coding_env import CodeAction
from terminal_env import MODELS as TERMINAL_MODELS
from terminal_env import RestartAction, RunAction

from openenv import AsyncEnvClient
from openenv.containers import wait_healthy
from openenv.containers._local import free_port
from openenv.sandbox import SandboxConfig
from openenv.sandbox._bwrap import bwrap_works
from openenv.sandbox._cgroup import SessionCgroup, cgroup_host
from openenv.sandbox._config import GiB, MiB, SessionLimits
from openenv.sandbox._cpuset import parse_cpu_list
from openenv.sandbox._sandbox import default_root
from openenv.sandbox._tmpfs import tmpfs_works

from .._quiet import quiet_host
from .._served import stop_child

pytestmark = pytest.mark.timeout(240)

SPEC = "memory=2G,cpus=1,cpu_weight=100,pids=512,disk=512M"
LIMITS = SessionLimits.parse(SPEC)
QUOTA = 6  # sessions per client address
HOST, CGROUP_WHY = cgroup_host()
DISK_WHY = tmpfs_works()
_BWRAP_WHY = bwrap_works(SandboxConfig().uid_base + SandboxConfig().uid_count if os.geteuid() == 0 else None)
#: "auto" is "strict" where bubblewrap works and "none" where it does not: each level in force once.
LEVELS = ["none"] + ([] if _BWRAP_WHY else ["strict"])
needs_cgroup = pytest.mark.skipif(HOST is None, reason=f"no cgroups for session limits here: {CGROUP_WHY}")
needs_tmpfs = pytest.mark.skipif(DISK_WHY != "", reason=f"no size-limited tmpfs here: {DISK_WHY}")

#: B steps for this long (bounded by count too) before, during and after each load.
IDLE_S, LOAD_S, MAX_STEPS = 2.0, 4.0, 2000
RESULTS: dict[str, dict[str, Any]] = {}
Server = tuple[str, str]  # (level, url)
REPORT = Path(tempfile.gettempdir()) / "openenv-resource-suite.json"


# --- servers and clients ---------------------------------------------------------------------


@contextmanager
def serve(target: str, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``openenv serve TARGET ARGS`` as a real process on loopback; yields its URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "openenv", "serve", target, "--host", "127.0.0.1", "--port", str(port)]
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENENV_SANDBOX", "OPENENV_SANDBOX_LIMITS")}
    with tempfile.TemporaryFile() as log:
        environ = {**clean, **(env or {})}
        proc = subprocess.Popen([*cmd, *args], stdout=log, stderr=subprocess.STDOUT, env=environ)
        url = f"http://127.0.0.1:{port}"

        def tail() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")[-2000:]

        try:
            wait_healthy(url, timeout_s=60, alive=lambda: proc.poll() is None, logs=tail)
            yield url
        finally:
            stop_child(proc, 30)


@pytest.fixture(scope="module", params=LEVELS)
def terminal(request: pytest.FixtureRequest) -> Iterator[Server]:
    level = str(request.param)
    args = ("--sandbox", level, "--session-limits", SPEC, "--max-sessions-per-client", str(QUOTA))
    with serve("terminal", *args) as url:
        yield level, url


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    # Whole or not at all: another suite on this host may write it at the same time.
    written = REPORT.with_name(f"{REPORT.name}.{os.getpid()}")
    written.write_text(json.dumps(RESULTS, indent=1))
    written.replace(REPORT)


@asynccontextmanager
async def shells(url: str, count: int) -> AsyncIterator[list[AsyncEnvClient[Any, Any, Any]]]:
    envs = [AsyncEnvClient(url, TERMINAL_MODELS, timeout_s=120) for _ in range(count)]
    try:
        await asyncio.gather(*(env.reset(free_shell=True) for env in envs))
        yield envs
    finally:
        await asyncio.gather(*(env.close() for env in envs), return_exceptions=True)


async def sh(env: AsyncEnvClient[Any, Any, Any], command: str, timeout_s: float = 30) -> Any:
    return (await env.step(RunAction(command=command, timeout_s=timeout_s))).observation


# --- B's latency -----------------------------------------------------------------------------


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


class Bystander:
    """Session B: steps a trivial action and records how long each step took."""

    def __init__(self, step: Any) -> None:
        self.step = step
        self.phases: dict[str, list[float]] = {}

    async def run(self, phase: str, seconds: float, load: asyncio.Future[Any] | None = None) -> list[float]:
        """Steps for ``seconds`` (at most ``MAX_STEPS``); with ``load``, until it is done
        or ``seconds`` pass, whichever is first (at least 20 steps either way)."""
        times = self.phases.setdefault(phase, [])
        end = time.monotonic() + seconds
        for _ in range(MAX_STEPS):
            over = time.monotonic() > end or (load is not None and load.done())
            if over and len(times) >= 20:
                break
            start = time.perf_counter()
            await self.step()
            times.append(time.perf_counter() - start)
        return times

    async def around(self, load: Awaitable[Any], seconds: float = 120) -> Any:
        """Idle steps, steps while ``load`` runs, idle steps again; ``load``'s result."""
        await self.run("before", IDLE_S)
        task = asyncio.ensure_future(load)
        await self.run("during", seconds, task)
        result = await asyncio.wait_for(task, timeout=180)
        await self.run("after", IDLE_S)
        return result

    def p99_ms(self) -> dict[str, float]:
        """p99 of each phase, and ``idle``: of before and after together."""
        figures = {phase: round(p99(times) * 1000, 2) for phase, times in self.phases.items()}
        idle = self.phases.get("before", []) + self.phases.get("after", [])
        return {**figures, "idle": round(p99(idle) * 1000, 2)}

    def record(self, scenario: str, level: str, **extra: Any) -> dict[str, float]:
        figures = self.p99_ms()
        samples = {phase: len(times) for phase, times in self.phases.items()}
        RESULTS[f"{scenario}[{level}]"] = {"p99_ms": figures, "samples": samples, **extra}
        ratios = {k: round(v / figures["idle"], 2) for k, v in figures.items()}
        print(f"\n{scenario}[{level}]: B's p99 ms {figures}, ratio to idle {ratios}, {extra}")
        return figures


def terminal_bystander(env: AsyncEnvClient[Any, Any, Any]) -> Bystander:
    async def step() -> None:
        assert (await sh(env, "echo ok", timeout_s=10)).output == "ok\n"

    return Bystander(step)


def _cgroup_of_marked(mark: str) -> SessionCgroup | None:
    """The session cgroup of the process whose command line holds ``mark``, if any."""
    assert HOST is not None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if mark.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            continue
        key = ":memory:" if HOST.version == 1 else "0::"
        path = next(line.split(":", 2)[2] for line in lines if key in line)
        return SessionCgroup.attach(HOST, path.rsplit("/", 1)[1])
    return None


async def session_cgroup(env: AsyncEnvClient[Any, Any, Any]) -> SessionCgroup:
    """The cgroup of ``env``'s session, found from the host through a marked process."""
    mark = f"openenv-rsuite-{uuid.uuid4().hex}"
    await sh(env, f"(sh -c 'sleep 120; :' {mark} &)")  # not a job of the shell: `wait` skips it
    for _ in range(200):  # 10 s
        found = await asyncio.to_thread(_cgroup_of_marked, mark)
        if found is not None:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("the marked process did not show up in 10 s")


def healthy(url: str) -> None:
    assert httpx.get(f"{url}/health", timeout=10).status_code == 200


# --- the scenarios ---------------------------------------------------------------------------

#: Six children of 1.5 GiB each (every page written), 9 GiB together.
SIX_HOGS = (
    "for i in 1 2 3 4 5 6; do python3 -c 'import time; b = bytearray(1536 << 20); "
    'b[::4096] = b"x" * len(b[::4096]); time.sleep(2)\' 2>/dev/null & done; wait; echo done; times'
)


@needs_cgroup
async def test_six_processes_of_1_5_gib_stay_under_the_session_memory_limit(terminal: Server) -> None:
    level, url = terminal
    async with shells(url, 2) as (a, b):
        cgroup = await session_cgroup(a)
        bystander = terminal_bystander(b)
        obs = await bystander.around(sh(a, SIX_HOGS, timeout_s=120))
        stats = cgroup.stats()
        assert (await sh(a, "echo still here")).output == "still here\n"  # the session lives on
    peak = stats["memory_peak"]
    bystander.record("memory", level, peak_mib=peak // MiB, oom_kills=stats["memory_oom_kill"])
    assert "done" in obs.output
    assert 0 < peak <= 2 * GiB  # the six together, held under the session's limit
    assert stats["memory_oom_kill"] >= 1  # by the OOM killer, in this session's cgroup
    healthy(url)


#: 6 GiB in files of 256 MiB (each process's file-size rlimit is 256 MiB), then the total.
DD = (
    "mkdir big; for i in $(seq 24); do dd if=/dev/zero of=big/$i bs=1M count=256 2>&1 | grep -v records; "
    "done | sort | uniq -c; du -sm big"
)


@needs_tmpfs
async def test_writing_6_gib_stops_at_the_session_disk_limit(terminal: Server) -> None:
    level, url = terminal
    free_before = shutil.disk_usage(default_root()).free
    async with shells(url, 2) as (a, b):
        bystander = terminal_bystander(b)
        obs = await bystander.around(sh(a, DD, timeout_s=120))
        host_drop = free_before - shutil.disk_usage(default_root()).free
        await sh(a, "rm -rf big")
    written_mib = int(obs.output.strip().splitlines()[-1].split()[0])
    bystander.record("disk", level, written_mib=written_mib, host_disk_drop_mib=host_drop // MiB)
    assert "No space left on device" in obs.output
    assert written_mib <= 512
    assert host_drop < 1 * GiB  # the 6 GiB went nowhere on the host's disk (others write there too)
    healthy(url)


SPIN = "for i in 1 2 3 4; do (while :; do :; done) & done; echo spinning"
#: B's p99 step while A spins, a sanity bound (an echo takes about a millisecond; on a
#: loaded 2-core machine B's p99 was 30 ms with no spinner at all). What proves the
#: isolation is what the kernel says: the quota's CPU counter and every affinity.
SPIN_BOUND_MS = 200.0


def pinned_cores(cgroup: SessionCgroup) -> list[int]:
    """The cores the session's cgroup is pinned to (empty: not pinned)."""
    if HOST is None or HOST.cpuset is None:
        return []
    try:
        cores = parse_cpu_list((HOST.cpuset / cgroup.name / "cpuset.cpus").read_text())
    except OSError:
        return []
    return cores if len(cores) < (os.cpu_count() or 1) else []


def affinities(cgroup: SessionCgroup) -> set[int]:
    """Every core any process of the session may run on."""
    cores: set[int] = set()
    for pid in cgroup.pids():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # gone meanwhile
        line = next(x for x in status.splitlines() if x.startswith("Cpus_allowed_list:"))
        cores.update(parse_cpu_list(line.split(":", 1)[1]))
    return cores


@needs_cgroup
async def test_four_spinners_are_held_to_their_session_core(terminal: Server) -> None:
    level, url = terminal
    # Up to three runs while A and B share a core (the sessions of the test before may
    # still be closing, holding the other): pinned apart is what is checked.
    for attempt in (1, 2, 3):
        async with shells(url, 2) as (a, b):
            cgroup = await session_cgroup(a)
            b_cgroup = await session_cgroup(b)
            pinned, pinned_b = pinned_cores(cgroup), pinned_cores(b_cgroup)
            bystander = terminal_bystander(b)
            await bystander.run("before", IDLE_S)
            assert (await sh(a, SPIN)).output.endswith("spinning\n")
            await asyncio.sleep(0.5)  # the four are running
            first, start = cgroup.stats(), time.monotonic()
            await bystander.run("during", LOAD_S)
            last, elapsed = cgroup.stats(), time.monotonic() - start
            spinners_on = affinities(cgroup)
            assert (await a.step(RestartAction())).observation.session_restarted  # kills the four
            await bystander.run("after", IDLE_S)
        cores_used = (last["cpu_usage_usec"] - first["cpu_usage_usec"]) / (elapsed * 1e6)
        throttled = last["cpu_nr_throttled"] - first["cpu_nr_throttled"]
        figures = bystander.record(
            "spinners",
            level,
            cores_used=round(cores_used, 2),
            throttled_periods=throttled,
            cores=os.cpu_count(),
            pinned=pinned,
            pinned_b=pinned_b,
            attempt=attempt,
        )
        if not (pinned and set(pinned) & set(pinned_b)):
            break
        await asyncio.sleep(2)  # for the earlier sessions to close
    quiet, load = quiet_host()
    assert cores_used <= 1.1  # four spinners, held to the session's one core by its quota
    if pinned:
        assert spinners_on == set(pinned)  # not one of them may run on another core
        assert pinned_b
        assert not set(pinned) & set(pinned_b), "A and B on one core three times"
    if quiet:  # a latency bound on a quiet host only; the kernel's figures above on any
        assert figures["during"] < SPIN_BOUND_MS, load


async def test_2000_creations_stop_at_the_client_quota_while_another_client_gets_one(
    terminal: Server,
) -> None:
    level, url = terminal

    def create_2000() -> list[httpx.Response]:
        with httpx.Client(base_url=url, timeout=30) as http:
            return [http.post("/sessions") for _ in range(2000)]

    def another_client_then_cleanup(answers: list[httpx.Response]) -> int:
        """Another address asks for a session; then every session made here is closed."""
        transport = httpx.HTTPTransport(local_address="127.0.0.2")
        with httpx.Client(base_url=url, timeout=30, transport=transport) as other:
            got = other.post("/sessions")
            if got.status_code == 201:
                assert other.delete(f"/sessions/{got.json()['session_id']}").status_code == 200
        with httpx.Client(base_url=url, timeout=30) as http:
            for r in answers:
                if r.status_code == 201:
                    assert http.delete(f"/sessions/{r.json()['session_id']}").status_code == 200
        return got.status_code

    async with shells(url, 1) as (b,):  # B holds one of 127.0.0.1's places
        bystander = terminal_bystander(b)
        answers = await bystander.around(asyncio.to_thread(create_2000))
        other_status = await asyncio.to_thread(another_client_then_cleanup, answers)
    codes = [r.status_code for r in answers]
    bystander.record("quota", level, created=codes.count(201), refused=codes.count(429))
    assert codes == [201] * (QUOTA - 1) + [429] * (2000 - QUOTA + 1)
    assert answers[-1].json()["error"]["code"] == "QUOTA_EXCEEDED"
    assert other_status == 201  # another address is not starved


SLEEPERS = 40
CODING = {
    "cell_timeout_s": 30.0,
    "grace_s": 0.5,
    "pool_size": 4,
    "memory_mb": 512,
    "nproc": 256,
    "max_steps": 100_000,
}
SLEEP = CodeAction(code="import time; time.sleep(6)")


@pytest.mark.parametrize("level", LEVELS)
async def test_40_blocked_cells_leave_a_41st_session_step_under_50_ms(level: str) -> None:
    env = {"OPENENV_ENV_KWARGS": json.dumps({**CODING, "sandbox": level})}
    with serve("coding", "--session-limits", SPEC, env=env) as url:
        clients = [AsyncEnvClient(url, CODING_MODELS, timeout_s=120) for _ in range(SLEEPERS + 1)]
        try:
            await asyncio.gather(*(c.reset(task_id="two_sum") for c in clients))
            *sleepers, probe = clients
            sleeping: list[asyncio.Future[Any]] = []
            blocked_steps = 0  # B's steps that ended while none of the 40 cells had

            async def step() -> None:
                nonlocal blocked_steps
                assert (await probe.step(CodeAction(code="1 + 1"))).observation.result == "2"
                blocked_steps += bool(sleeping) and not any(t.done() for t in sleeping)

            bystander = Bystander(step)
            await bystander.run("before", IDLE_S)
            sleeping += [asyncio.ensure_future(c.step(SLEEP)) for c in sleepers]
            await asyncio.sleep(1.0)  # the 40 cells have started
            await bystander.run("during", LOAD_S, asyncio.gather(*sleeping))
            still_sleeping = sum(not t.done() for t in sleeping)
            for done in await asyncio.wait_for(asyncio.gather(*sleeping), timeout=60):
                assert done.observation.exception is None
            await bystander.run("after", IDLE_S)
        finally:
            await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    figures = bystander.record(
        "blocked40", level, still_sleeping_at_end=still_sleeping, steps_while_all_blocked=blocked_steps
    )
    # B stepped while all 40 cells were blocked (an order, not a window: "during" may
    # outlast the cells' 6 s on a loaded host; B's first 20 steps are what is counted)
    assert blocked_steps >= 20, (blocked_steps, still_sleeping)
    quiet, load = quiet_host()
    if quiet:  # a latency bound on a quiet host only (tests/_quiet.py); the order above on any
        assert figures["during"] < 50.0, load
