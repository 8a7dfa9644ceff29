"""What a coding server made and did not give back: sandbox directories, mounts,
cgroups, uids with processes, and its own threads (imported by plain name).

Other servers run on this host, so only what this server was seen to make counts:
the sandbox directories of the uids it held (from its open uid lock files) while
``Tracker.look`` ran.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time

from openenv.sandbox import _cgroup
from openenv.sandbox._procs import pids_of_uid
from openenv.sandbox._sandbox import default_root

_LOCK = re.compile(r"/\.uids/(\d+)\.lock$")


def held_uids(pid: int) -> set[int]:
    """The sandbox uids process ``pid`` holds now (its open lock files)."""
    uids = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                m = _LOCK.search(os.readlink(f"/proc/{pid}/fd/{fd}"))
                if m:
                    uids.add(int(m.group(1)))
    return uids


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def _uid_free(uid: int) -> bool:
    """Whether no process holds ``uid``'s lease now (tried without waiting)."""
    path = default_root() / ".uids" / f"{uid}.lock"
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # also drops the lock if it was taken
    return True


def _procs_of(uid: int) -> list[int]:
    """``uid``'s processes, zombies aside (a zombie holds nothing but its pid; reaping
    orphans is init's job, and this machine's init does not)."""
    return pids_of_uid(uid)


def _cgroup_dirs(name: str) -> list[str]:
    host, _ = _cgroup.cgroup_host()
    return [] if host is None else [str(p) for p in host.dirs(name) if p.exists()]


class Tracker:
    """Records the sandboxes a server process makes; ``leftovers`` lists what stays."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.uids: set[int] = set()
        self.dirs: set[str] = set()

    def look(self) -> None:
        """Note the uids the server holds now and their sandbox directories."""
        held = held_uids(self.pid)
        self.uids |= held
        for uid in held:
            for path in default_root().glob(f"u{uid}-*"):
                self.dirs.add(path.name)

    def leftovers(self, *, still_held: set[int]) -> list[str]:
        """What the sandboxes seen (less those of uids in ``still_held``) left."""
        left = []
        gone = self.uids - still_held
        with open("/proc/mounts") as f:
            mounts = f.read()
        for name in sorted(self.dirs):
            uid = int(name[1:].split("-")[0])
            if uid in still_held:
                continue
            if (default_root() / name).exists():
                left.append(f"directory {name}")
            if name in mounts:
                left.append(f"mount {name}")
            left += [f"cgroup {p}" for p in _cgroup_dirs(name)]
        for uid in sorted(gone):
            # the processes first, then the lease: a uid leased meanwhile by another server on
            # the host (a second suite) is held, and its processes are not this server's
            procs = _procs_of(uid)
            if procs and _uid_free(uid):
                left.append(f"processes of uid {uid}: {procs}")
        return left

    def wait_clean(self, *, still_held: set[int], timeout_s: float = 20.0) -> list[str]:
        """``leftovers`` once empty, or what is left after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.leftovers(still_held=still_held)
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)
