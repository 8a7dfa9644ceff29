"""Uids handed to sandboxes, and finding and killing every process a sandbox left."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .._exceptions import SandboxError


class UidLease:
    """One uid held by this process (an flock on a file) until ``release``."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # drops the flock
            self._fd = None


def lease_uid(lock_dir: Path, base: int, count: int) -> UidLease | None:
    """A free uid: no other live sandbox (in any process) holds it and no process,
    not even a zombie, still runs under it. None when there is none.

    The lock files live in ``lock_dir``; a lock dies with the process holding it, so
    a crashed server's uids come free (after their leftovers are killed). The search
    starts at a random place, so a uid just given back rests a while.
    """
    lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    start = secrets.randbelow(count)
    for i in range(count):
        lease = try_lease(lock_dir, base + (start + i) % count)
        if lease is not None:
            return lease
    return None


def try_lease(lock_dir: Path, uid: int, *, zombies_ok: bool = False) -> UidLease | None:
    """``uid``'s lease when no live sandbox holds it (its leftover processes killed),
    else None (also while zombies of it remain, unless ``zombies_ok``)."""
    fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    if pids_of_uid(uid, zombies=True):  # one scan of /proc for a clean uid (nearly all)
        kill_all_of_uid(uid)  # whatever a crashed server left under it
        if not zombies_ok and pids_of_uid(uid, zombies=True):  # zombies count against its nproc
            os.close(fd)
            return None
    return UidLease(uid, fd)


def pids_of_uid(uid: int, *, zombies: bool = False) -> list[int]:
    """Processes whose ``/proc`` entry belongs to ``uid`` (zombies only if asked)."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid and (zombies or not _is_zombie(entry.name)):
                    pids.append(int(entry.name))
    return pids


def _is_zombie(pid: str) -> bool:
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X")


def pids_with_marker(marker: bytes) -> list[int]:
    """This user's processes whose environment holds ``marker`` (``NAME=value``)."""
    pids, me, own = [], os.getuid(), os.getpid()
    for pid in pids_of_uid(me):
        if pid == own:
            continue
        with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as f:
            if marker in f.read().split(b"\0"):
                pids.append(pid)
    return pids


#: Run as the uid (``setpriv`` switched to it): ``kill(-1)`` there reaches exactly that
#: uid's processes, the shell itself excepted. The check that the switch happened (real
#: and effective uid, from the shell's own status; builtins only, no fork) stands guard:
#: run as root, ``kill -1`` would reach every process of the host.
_KILL_AS_UID = """
while read -r key real effective rest; do
    if [ "$key" = Uid: ]; then
        [ "$real" = "$1" ] && [ "$effective" = "$1" ] && kill -KILL -1
        exit
    fi
done < /proc/self/status
"""
_KILL_WAIT_S = 10.0


def kill_all_of_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` (as root): a child takes the uid and kills -1.

    ``kill(-1)`` reaches every process the caller may signal, which for an
    unprivileged uid is exactly its own; repeated while any are left (a fork bomb
    races the first pass). The child is spawned (``setpriv``, then ``sh``), never
    forked from this process: ``os.fork`` holds the GIL while the kernel copies the
    server's page tables, and under load that stalled every session's event loop.
    """
    if uid in (0, os.getuid()):
        raise ValueError(f"refusing to kill every process of uid {uid}")
    argv: list[str] | None = None
    for _ in range(20):
        if not pids_of_uid(uid):
            return
        if argv is None:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                raise SandboxError("'setpriv' is not installed (needed to kill a sandbox's processes)")
            argv = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                    "/bin/sh", "-c", _KILL_AS_UID, "openenv-kill", str(uid)]  # fmt: skip
        with contextlib.suppress(subprocess.TimeoutExpired):  # killed by run(); tried again
            subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={"PATH": "/usr/bin:/bin"},
                timeout=_KILL_WAIT_S,
                check=False,
            )
        time.sleep(0.002)


def kill_pids(pids: list[int]) -> None:
    """SIGKILL each of ``pids`` (already gone is fine)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_group(pgid: int) -> None:
    """SIGKILL a process group (already gone is fine)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
