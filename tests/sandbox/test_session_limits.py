"""Session limits on a sandbox's whole process tree (cgroups, a size-limited tmpfs), on
real processes. The sizes are scaled down from the issue's (6 x 1.5 GiB, 6 GiB) to keep
CI's memory sane: six processes of 96 MiB under a 256 MiB session limit, 64 MiB of
writes under a 32 MiB disk limit."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from openenv._exceptions import SandboxError
from openenv.sandbox import Sandbox, SandboxConfig
from openenv.sandbox._bwrap import bwrap_works
from openenv.sandbox._config import Isolation, MiB, SandboxLevel, SessionLimits
from openenv.sandbox._sandbox import session_limits_support

LIMITED = SandboxConfig(level="auto").with_session_limits(  # type: ignore[arg-type]
    memory_bytes=256 * MiB, pids=64, disk_bytes=32 * MiB, cpus=1.0
)
_, DISK_OK, MISSING = session_limits_support(LIMITED)
BWRAP_WHY = bwrap_works(LIMITED.uid_base + LIMITED.uid_count if os.geteuid() == 0 else None)
BWRAP_OK = not BWRAP_WHY
PLACES = ("/dev/shm", "/tmp", "/workspace")
needs_limits = pytest.mark.skipif(MISSING != "", reason=f"this host cannot enforce session limits: {MISSING}")

#: Each child holds 96 MiB; six of them need 576 MiB, over the 256 MiB of the session.
SIX_HOGS = (
    "for i in 1 2 3 4 5 6; do "
    "python3 -c 'import time; b = bytearray(96 << 20); b[::4096] = b\"x\" * len(b[::4096]); time.sleep(5)' & "
    "done; wait; echo done"
)


def test_parse_reads_sizes_and_none() -> None:
    limits = SessionLimits.parse("memory=512M, cpus=0.5, pids=128, disk=1G, cpu_weight=none")
    assert limits.memory_bytes == 512 * MiB
    assert limits.cpus == 0.5
    assert limits.pids == 128
    assert limits.disk_bytes == 1024 * MiB
    assert limits.cpu_weight is None
    assert not SessionLimits.parse("off").any
    with pytest.raises(SandboxError, match="cannot read"):
        SessionLimits.parse("memory=lots")


@needs_limits
def test_the_whole_tree_stays_under_the_session_memory_limit() -> None:
    with Sandbox(LIMITED) as box:
        box.run(["sh", "-c", SIX_HOGS], timeout_s=30)
        usage = box.usage()
    assert usage, "a limited sandbox reports its cgroup's counters"
    assert usage["memory_peak"] <= 256 * MiB  # the kernel held the six together under the limit
    assert usage["memory_oom_kill"] >= 1  # by killing some of them, not the host's processes


@needs_limits
def test_process_count_is_limited_for_the_tree() -> None:
    # Each child lives until all were started (not 2 s: a loaded host forks slowly), then goes.
    spawn = 'p=""; for i in $(seq 200); do sleep 60 & p="$p $!"; done 2>/dev/null; kill $p 2>/dev/null; wait'
    with Sandbox(LIMITED) as box:
        box.run(["sh", "-c", spawn], timeout_s=30)
        hits = box.usage()["pids_max_hits"]
    assert hits >= 1  # the kernel refused forks past 64 processes in the tree


@pytest.mark.skipif(not DISK_OK, reason=f"no size-limited tmpfs here: {MISSING}")
def test_writes_stop_at_the_disk_limit() -> None:
    with Sandbox(LIMITED) as box:
        done = box.run(["sh", "-c", "dd if=/dev/zero of=big bs=1M count=64 2>&1; du -sm big"], timeout_s=30)
    out = done.stdout.decode()
    written_mib = int(out.strip().splitlines()[-1].split()[0])
    assert written_mib <= 32
    assert "No space left" in out


@pytest.mark.skipif(not DISK_OK, reason=f"no size-limited tmpfs here: {MISSING}")
def test_shm_tmp_and_the_workdir_share_one_disk_limit_under_bubblewrap() -> None:
    """24 MiB into each of ``/dev/shm``, ``/tmp`` and the workdir: 32 MiB in all get
    stored, not 72; bubblewrap's root and ``/dev`` (tmpfs of half the host's memory)
    take nothing."""
    config = LIMITED.with_session_limits(memory_bytes=None)  # ENOSPC, not the OOM killer
    with Sandbox(replace(config, level=SandboxLevel.STRICT) if BWRAP_OK else config) as box:
        if box.isolation is not Isolation.BWRAP:
            pytest.skip(f"bubblewrap cannot run here: {BWRAP_WHY}")
        fill = "; ".join(f"dd if=/dev/zero of={d}/f bs=1M count=24 2>/dev/null" for d in PLACES)
        done = box.run(["sh", "-c", f"{fill}; du -smc {' '.join(p + '/f' for p in PLACES)}"], timeout_s=30)
        refused = box.run(["sh", "-c", "echo x > /x; echo x > /dev/x; mkdir /y"], timeout_s=10)
    assert int(done.stdout.split()[-2]) <= 32  # du's total
    assert refused.stderr.count(b"Read-only file system") == 3


def test_limits_are_reported_with_the_level() -> None:
    with Sandbox(LIMITED) as box:
        described = box.describe()
    reported = described["session_limits"]
    assert reported["memory_bytes"] == 256 * MiB
    assert reported["pids"] == 64
    assert reported["enforced"] is (MISSING == "")


def test_the_server_sets_them_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_SANDBOX_LIMITS", "memory=128M,pids=32,disk=none")
    limits = SandboxConfig.from_env().session_limits
    assert (limits.memory_bytes, limits.pids, limits.disk_bytes) == (128 * MiB, 32, None)
