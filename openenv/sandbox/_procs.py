"""Uids handed to sandboxes, and finding and killing every process a sandbox left."""

from __future__ import annotations

import contextlib
import fcntl
import functools
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
    else None: also while a process of it runs in another world (``foreign_pids``: a
    container's sandbox; never killed), and while zombies of it remain, unless
    ``zombies_ok``."""
    fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    held = pids_of_uid(uid, zombies=True)  # one scan of /proc for a clean uid (nearly all)
    if held:
        if foreign_pids(uid, held):  # a live holder in another world: taken, never killed
            os.close(fd)
            return None
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


def foreign_pids(uid: int, pids: list[int]) -> list[int]:
    """Those of ``pids`` (processes of ``uid``) that live in another world: in a pid
    namespace below ours that a process of another uid opened (a container's runtime,
    ``unshare`` run as root) and that is not dying. Such a process is seen here (a
    container's uids are the host's) but is no sandbox of ours: ours enter a pid
    namespace only through bubblewrap started under the sandbox's own uid. Not
    foreign: a process in our own namespace, a zombie, one gone, and one whose
    namespace's first process is a zombie (the kernel kills the rest: a crashed
    server's bubblewrap, reparented to init)."""
    return [pid for pid in pids if _foreign(uid, pid)]


#: How far up the parent chain a process may sit below our pid namespace.
_MAX_DEPTH = 64


def _foreign(uid: int, pid: int) -> bool:
    """Whether ``pid`` lives in a live pid namespace entered from ours under another
    uid than ``uid`` (by its nearest ancestor in our namespace: the gate). A gate out
    of sight (a parent in a namespace above ours, or gone) counts as another's."""
    own = _own_depth()
    try:
        ppid, _, depth, dead = _status(pid)
    except (OSError, ValueError):
        return False  # gone: nothing to spare
    if dead:
        return False
    for _ in range(_MAX_DEPTH):
        if depth <= own:
            return False  # in our own pid namespace
        if ppid == 0:
            return True
        try:
            parent_ppid, parent_uid, depth, parent_dead = _status(ppid)
        except (OSError, ValueError):
            return True
        if depth <= own:  # ppid is the gate; ``dead``: the namespace's first process
            return parent_uid != uid and not dead
        ppid, dead = parent_ppid, parent_dead
    return True


@functools.cache
def _own_depth() -> int:
    """How many pid namespaces this process's ``NSpid`` lists: 1 when ``/proc`` is
    our namespace's, more when it was mounted in an ancestor's."""
    return _status(os.getpid())[2]


def _status(pid: int) -> tuple[int, int, int, bool]:
    """(parent pid, real uid, how many pid namespaces it is in, whether it is a
    zombie) from ``/proc/PID/status`` (world-readable: no ptrace access needed, unlike
    ``ns/pid``). ``NSpid`` lists its pid in each namespace from ``/proc``'s down."""
    ppid, real_uid, depth, dead = -1, -1, 1, False
    with open(f"/proc/{pid}/status", "rb") as f:
        for line in f:
            key, _, value = line.partition(b":")
            if key == b"State":
                dead = value.split()[0] in (b"Z", b"X")
            elif key == b"PPid":
                ppid = int(value)
            elif key == b"Uid":
                real_uid = int(value.split()[0])
            elif key == b"NSpid":
                depth = len(value.split())
    if ppid < 0 or real_uid < 0:
        raise ValueError(f"no PPid or Uid in /proc/{pid}/status")
    return ppid, real_uid, depth, dead


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
    unprivileged uid is exactly its own, in every pid namespace; repeated while any
    are left (a fork bomb races the first pass). While the uid also runs processes in
    another world (``foreign_pids``: a container's), those are spared and ours are
    killed one by one instead. The child is spawned (``setpriv``, then ``sh``), never
    forked from this process: ``os.fork`` holds the GIL while the kernel copies the
    server's page tables, and under load that stalled every session's event loop.
    """
    if uid in (0, os.getuid()):
        raise ValueError(f"refusing to kill every process of uid {uid}")
    argv: list[str] | None = None
    for _ in range(20):
        pids = pids_of_uid(uid)
        if not pids:
            return
        foreign = foreign_pids(uid, pids)
        if foreign:  # kill(-1) would reach them too: ours one by one
            ours = [pid for pid in pids if pid not in foreign]
            if not ours:
                return
            kill_pids(ours)
            time.sleep(0.002)
            continue
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
