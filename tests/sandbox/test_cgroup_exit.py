"""A sandbox's processes are killed with its CPU weight raised, and the weight is put
back after: a sandbox that lives on (a terminal's shell restarted, a verifier's checks)
keeps the weight it had. (A killed process must run to exit; starved in a busy group it
kept its cgroup busy past the removal's retries, and a cgroup was left behind.)

Also: a new process joins its session's CPU cgroup last (the others first), so its
joins are made while it still runs with the server's priority.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import time
from pathlib import Path

import pytest

from openenv.sandbox import Sandbox, SandboxConfig, _cgroup
from openenv.sandbox._config import MiB
from openenv.sandbox._sandbox import session_limits_support

CONFIG = SandboxConfig(level="none").with_session_limits(  # type: ignore[arg-type]
    memory_bytes=256 * MiB, pids=64, cpus=1.0
)
_, _, MISSING = session_limits_support(CONFIG)
pytestmark = pytest.mark.skipif(MISSING != "", reason=f"this host cannot enforce session limits: {MISSING}")


def test_kill_raises_the_weight_while_it_kills_and_puts_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    with Sandbox(CONFIG) as box:
        group = box._cgroup
        assert group is not None
        cpu = group._path("cpu")
        weight = cpu / ("cpu.weight" if group.host.version == 2 else "cpu.shares")
        weight.write_text("50" if group.host.version == 2 else "512")
        before = weight.read_text().strip()
        seen: list[str] = []
        kill_tree = _cgroup.kill_tree

        def watching(path: Path) -> None:
            seen.append(weight.read_text().strip())
            kill_tree(path)

        monkeypatch.setattr(_cgroup, "kill_tree", watching)
        proc = box.popen(["sleep", "300"], stdout=subprocess.DEVNULL)
        for _ in range(200):
            if group.pids():
                break
            time.sleep(0.01)
        box.kill()
        monkeypatch.undo()
        assert proc.wait(timeout=10) != 0
        assert group.pids() == []
        assert seen
        assert seen[0] != before  # raised while killing
        assert weight.read_text().strip() == before  # and put back


def test_the_cpu_cgroup_is_joined_last() -> None:
    with Sandbox(CONFIG) as box:
        group = box._cgroup
        assert group is not None
        files = group.procs_files
        assert len(files) == len(group.dirs)
        assert files[-1] == str(group._path("cpu") / "cgroup.procs")


def test_a_cgroup_still_busy_past_its_removal_is_named_and_removed_in_the_background(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A process that outlives the removal's kills (none here: they are made no-ops for
    the removal) is logged with its state, and the background retries kill it and remove
    the directory."""
    monkeypatch.setattr(_cgroup, "RMDIR_WAIT_S", 0.05)
    with Sandbox(CONFIG) as box:
        group = box._cgroup
        assert group is not None
        proc = box.popen(["sleep", "300"], stdout=subprocess.DEVNULL)
        for _ in range(200):
            if group.pids():
                break
            time.sleep(0.01)
        memory = group._path("memory")
        kill_tree = _cgroup.kill_tree
        monkeypatch.setattr(_cgroup, "kill_tree", lambda path: None)
        with caplog.at_level(logging.WARNING, logger="openenv.sandbox"):
            _cgroup._rmdir(memory)  # busy: its process lives
        assert memory.exists()
        assert f"still busy 0.05 s after its removal began (pid {group.pids()[0]} " in caplog.text
        monkeypatch.setattr(_cgroup, "kill_tree", kill_tree)
        assert proc.wait(timeout=10) != 0  # killed by the background retries
        for _ in range(100):
            if not memory.exists():
                break
            time.sleep(0.05)
        assert not memory.exists()


def test_a_process_that_joins_after_the_kill_is_killed_and_the_cgroups_go_with_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sandbox's first step started as the sandbox closes joins its cgroups after they
    were emptied (then runs its command): the removal kills it and every directory is
    gone when ``close`` returns (before: a busy directory was retried without a kill,
    and the process lived on in it until the uid's next lease)."""
    monkeypatch.setattr(_cgroup, "RMDIR_WAIT_S", 1.0)
    box = Sandbox(CONFIG)
    group = box._cgroup
    assert group is not None
    late: list[subprocess.Popen[bytes]] = []
    kill_tree = _cgroup.kill_tree

    def joined_after(path: Path) -> None:
        kill_tree(path)
        if path == group.dirs[-1] and not late:  # the last one emptied: a process joins them all
            proc = subprocess.Popen(["sleep", "300"])
            late.append(proc)
            for where in group.dirs:
                with contextlib.suppress(OSError):  # removed already
                    (where / "cgroup.procs").write_text(str(proc.pid))

    monkeypatch.setattr(_cgroup, "kill_tree", joined_after)
    try:
        box.close()
        assert late
        assert [str(p) for p in group.dirs if p.exists()] == []
        assert late[0].wait(timeout=10) != 0  # killed
    finally:
        for proc in late:
            proc.kill()
            proc.wait(timeout=10)
