"""CPU fairness (``openenv.sandbox._fairness``): a session that has used little CPU lately
gets ``cpu_boost`` times its weight, one that burns CPU its base weight.

The policy's passes run on a clock the test sets (``tick(now)``), so no assertion
depends on how fast this machine is: a busy session is told busy by the CPU time its
counter really gained, however long that took.
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

import pytest

from openenv import SandboxError
from openenv.sandbox import Sandbox, SandboxConfig, SandboxLevel, SessionLimits, _fairness
from openenv.sandbox._cgroup import cgroup_host
from openenv.sandbox._fairness import Counter, CpuFairness

HOST, WHY = cgroup_host()
P = _fairness.PERIOD_S


def _files(tmp_path: Path, name: str) -> tuple[Path, Path]:
    usage, weight = tmp_path / f"{name}.usage", tmp_path / f"{name}.weight"
    usage.write_text("0\n")
    weight.write_text("1024")
    return usage, weight


def test_a_busy_session_loses_its_boost_and_an_idle_one_gets_it(tmp_path: Path) -> None:
    """Counters written by the test, the real weight files the policy writes."""
    policy = CpuFairness(warmup_s=4 * P)
    (busy_use, busy_w), (idle_use, idle_w) = _files(tmp_path, "busy"), _files(tmp_path, "idle")
    policy.add("busy", Counter(str(busy_use)), str(busy_w), "1024", "10240", run=False)
    policy.add("idle", Counter(str(idle_use)), str(idle_w), "1024", "10240", run=False)
    now, used = policy.clock(), 0
    for _ in range(3):  # both quiet, but not watched for the warm-up yet: base weight
        now += P
        policy.tick(now)
        assert busy_w.read_text() == idle_w.read_text() == "1024"
    for _ in range(2):
        now += P
        policy.tick(now)
    assert busy_w.read_text() == idle_w.read_text() == "10240"
    # "busy" starts to burn one core: it loses the boost at the next pass.
    used += int(P * 1e9)
    busy_use.write_text(f"{used}\n")
    now += P
    policy.tick(now)
    assert (busy_w.read_text(), idle_w.read_text()) == ("1024", "10240")
    for _ in range(10):  # and stays at the base weight while it burns
        used += int(P * 1e9)
        busy_use.write_text(f"{used}\n")
        now += P
        policy.tick(now)
        assert busy_w.read_text() == "1024"
    # Quiet again: back to the boost within a few periods (the average halves each).
    for _ in range(4):
        now += P
        policy.tick(now)
    assert busy_w.read_text() == "10240"
    assert policy.weights() == {"busy": "10240", "idle": "10240"}


def test_a_restarted_session_starts_over_at_the_base_weight(tmp_path: Path) -> None:
    policy = CpuFairness(warmup_s=2 * P)
    usage, weight = _files(tmp_path, "s")
    policy.add("s", Counter(str(usage)), str(weight), "1024", "10240", run=False)
    now = policy.clock()
    for _ in range(3):
        now += P
        policy.tick(now)
    assert weight.read_text() == "10240"
    policy.clock = lambda: now
    policy.restart("s")  # a pooled sandbox handed to a new session
    assert weight.read_text() == "1024"
    policy.remove("s")
    policy.tick(now + P)
    assert policy.weights() == {}


def test_the_v2_counter_is_read_from_cpu_stat(tmp_path: Path) -> None:
    stat = tmp_path / "cpu.stat"
    stat.write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    assert Counter(str(stat), "usage_usec").read_ns() == 1_500_000
    assert Counter(str(tmp_path / "gone")).read_ns() is None


def test_cpu_boost_is_a_session_limit() -> None:
    assert SessionLimits().cpu_boost == 10
    assert SessionLimits.parse("cpu_boost=none").cpu_boost is None
    assert SessionLimits.parse("cpu_boost=4").cpu_boost == 4
    assert SessionLimits.off().cpu_boost is None
    with pytest.raises(SandboxError):
        SessionLimits.parse("cpu_boost=0")


def test_why_it_is_off_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="openenv.sandbox"):
        for _ in range(3):
            _fairness.off_once("test: no cgroups on this pretend host")
    said = [r for r in caplog.records if "no cgroups on this pretend host" in r.getMessage()]
    assert len(said) == 1


def _config(**limits: object) -> SandboxConfig:
    return SandboxConfig(level=SandboxLevel.AUTO).with_session_limits(**limits)


needs_cgroups = pytest.mark.skipif(HOST is None, reason=f"no cgroups for sandboxes here: {WHY}")


@needs_cgroups
def test_real_sessions_a_burning_one_at_base_a_quiet_one_boosted() -> None:
    """Two real sandboxes, the policy's passes on the test's clock: the one whose loop
    has really burnt CPU goes to its base weight in the kernel, the other is boosted."""
    # cpu_boost=None: this process's own monitor leaves these two alone.
    quiet, burner = Sandbox(_config(cpu_boost=None)), Sandbox(_config(cpu_boost=None))
    proc = None
    try:
        policy = CpuFairness(warmup_s=2 * P)
        for box in (quiet, burner):
            assert box._cgroup is not None
            found = box._cgroup.fairness(SessionLimits())
            if isinstance(found, str):
                pytest.skip(f"no per-session CPU weight on this host: {found}")
            policy.add(box.root.name, *found, run=False)
        quiet_file, burner_file = (policy._sessions[b.root.name].weight_file for b in (quiet, burner))
        base, boosted = policy._sessions[quiet.root.name].base, policy._sessions[quiet.root.name].boosted
        now = policy.clock()
        for _ in range(3):
            now += P
            policy.tick(now)
        assert Path(quiet_file).read_text().strip() == Path(burner_file).read_text().strip() == boosted
        proc = burner.popen(["sh", "-c", "read go; while :; do :; done"], stdin=subprocess.PIPE)
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        counter = policy._sessions[burner.root.name].counter
        start, deadline = counter.read_ns() or 0, time.monotonic() + 60
        # Half a period of CPU per period is well past the light line (0.2 cores).
        while (counter.read_ns() or 0) - start < P * 1e9 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (counter.read_ns() or 0) - start >= P * 1e9, "the loop got no CPU in 60 s"
        now += P
        policy.tick(now)
        assert Path(burner_file).read_text().strip() == base
        assert Path(quiet_file).read_text().strip() == boosted
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        quiet.close()
        burner.close()


@needs_cgroups
def test_a_sandbox_is_watched_from_its_start_to_its_close() -> None:
    box = Sandbox(_config())
    monitor = _fairness.monitor()
    try:
        if not box._fair:
            pytest.skip("no per-session CPU counter here (logged)")
        name = box.root.name
        assert monitor.weights()[name] == policy_base(box)  # in its warm-up
        box.repin()  # handed to a session: starts over
        assert monitor.weights()[name] == policy_base(box)
    finally:
        box.close()
    assert name not in monitor.weights()
    thread = monitor._thread  # this monitor's own thread, not any of that name
    deadline = time.monotonic() + 5
    while thread is not None and thread.is_alive():
        if monitor.weights():
            break  # another sandbox of this process is watched now: the thread runs on for it
        assert time.monotonic() < deadline, "the monitor thread outlived its last session"
        time.sleep(0.05)


def policy_base(box: Sandbox) -> str:
    assert box._cgroup is not None
    found = box._cgroup.fairness(box.config.session_limits)
    assert not isinstance(found, str)
    return found[2]
