"""A sandbox uid busy in another pid namespace (a container's sandbox: the host sees
its processes, under the host's uids) is taken: never leased, never killed. A
leftover of the uid in our own namespace (a crashed server's) is still reclaimed.

The other world is made with ``unshare --pid --fork --mount-proc`` run as root, then
``setpriv`` to the uid: what a container's runtime does, without an image."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv._exceptions import SandboxError
from openenv.sandbox import Sandbox, SandboxConfig, SandboxLevel
from openenv.sandbox._procs import kill_all_of_uid, lease_uid, pids_of_uid, try_lease
from openenv.sandbox._sandbox import reclaim

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")),
    reason="needs root, unshare and setpriv (util-linux) to run a uid in a pid namespace of its own",
)

#: Far from every range a server leases from (190000 up; the coding image's 390000 up).
_FIRST_UID = 480_000
_WAIT_S = 20.0


@pytest.fixture
def uid() -> Iterator[int]:
    """A uid that runs nothing, held (an flock shared by every run on this host) for
    this test alone; whatever the test left under it is killed at the end (by pid:
    its processes are the test's own)."""
    locks = Path(tempfile.gettempdir()) / "openenv-test-uids"
    locks.mkdir(mode=0o700, exist_ok=True)
    start = secrets.randbelow(10_000)
    for i in range(10_000):
        candidate = _FIRST_UID + (start + i) % 10_000
        fd = os.open(locks / f"{candidate}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if pids_of_uid(candidate, zombies=True):
            os.close(fd)
            continue
        try:
            yield candidate
        finally:
            for pid in pids_of_uid(candidate, zombies=True):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os.close(fd)
        return
    pytest.fail("no free test uid in 480000-489999")


def _as(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", "sleep", "120"]


@contextlib.contextmanager
def _started(argv: list[str], uid: int, *, foreign: bool) -> Iterator[int]:
    """Start ``argv`` (ending as ``uid``); yield the pid of its process under ``uid``
    that is (``foreign``) or is not in another world."""
    before = set(pids_of_uid(uid, zombies=True))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + _WAIT_S
        while True:
            new = [p for p in pids_of_uid(uid) if p not in before]
            new = [p for p in new if (_namespaces_deep(p) > 1) == foreign]
            if new:
                break
            assert proc.poll() is None, f"{argv[0]} exited {proc.returncode}"
            assert time.monotonic() < deadline, f"no process of uid {uid} after {_WAIT_S} s"
            time.sleep(0.01)
        yield new[0]
    finally:  # its processes under the uid first: unshare reaps its child and exits
        for pid in set(pids_of_uid(uid, zombies=True)) - before:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            proc.wait(timeout=_WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=_WAIT_S)


def _namespaces_deep(pid: int) -> int:
    """How many pid namespaces ``pid`` is in (1: ours), from its ``NSpid``; 0 if gone."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return len(line.split()) - 1
    return 0


def _in_other_world(uid: int) -> contextlib.AbstractContextManager[int]:
    argv = ["unshare", "--pid", "--fork", "--mount-proc", *_as(uid)]
    return _started(argv, uid, foreign=True)


def _in_our_world(uid: int) -> contextlib.AbstractContextManager[int]:
    return _started(_as(uid), uid, foreign=False)


def _alive(pid: int, uid: int) -> bool:
    return pid in pids_of_uid(uid)


def test_a_uid_busy_in_another_pid_namespace_is_taken_and_its_process_spared(
    uid: int, tmp_path: Path
) -> None:
    with _in_other_world(uid) as other:
        assert try_lease(tmp_path, uid) is None
        assert try_lease(tmp_path, uid, zombies_ok=True) is None
        assert lease_uid(tmp_path, uid, 1) is None
        config = SandboxConfig(level=SandboxLevel.NONE, root_dir=str(tmp_path), uid_base=uid, uid_count=1)
        with pytest.raises(SandboxError, match="in use"):
            Sandbox(config)
        assert reclaim(config) == []  # the server-start sweep leaves it too
        assert _alive(other, uid)


def test_a_leftover_in_our_own_namespace_is_still_reclaimed(uid: int, tmp_path: Path) -> None:
    with _in_our_world(uid) as leftover:
        lease = try_lease(tmp_path, uid, zombies_ok=True)  # it is the test's child: a zombie till reaped
        assert lease is not None
        try:
            assert not _alive(leftover, uid)
        finally:
            lease.release()
    with _in_our_world(uid) as leftover:
        config = SandboxConfig(level=SandboxLevel.NONE, root_dir=str(tmp_path), uid_base=uid, uid_count=1)
        assert reclaim(config) == [uid]
        assert not _alive(leftover, uid)


def test_teardown_kills_ours_and_spares_the_other_worlds(uid: int) -> None:
    """A sandbox's teardown (``kill_all_of_uid``) while another world started a
    process under the same uid after the lease: ``kill(-1)`` as the uid would reach
    it too, so ours go one by one."""
    with _in_other_world(uid) as other, _in_our_world(uid) as ours:
        kill_all_of_uid(uid)
        assert not _alive(ours, uid)
        assert _alive(other, uid)
