"""The lease a Monarch replica serves under.

The host actor (``_monarch_host.ReplicaHost``) starts each replica as ``python -m
openenv serve TARGET ...`` in a session of its own, with ``OPENENV_LEASE`` set to
``LEASE_FILE:LEASE_S``; ``openenv``'s ``main`` then calls ``hold_from_env()`` before the
command runs. A thread of the replica's process watches the lease file and the
process's parent (the actor's process): when the file is older than ``LEASE_S`` seconds
or gone, or the parent is gone, it ends the replica's process group (the server and
any workers of it): SIGTERM, then SIGKILL ``KILL_GRACE_S`` later. The actor touches
the file on every heartbeat, so a replica never outlives the host that leased it.
"""

from __future__ import annotations

import os
import signal
import threading
import time

#: ``LEASE_FILE:LEASE_S``, set by the host actor for the replica it starts.
LEASE_ENV = "OPENENV_LEASE"
#: Seconds between looks at the lease and the parent.
POLL_S = 0.25
#: Seconds between the group's SIGTERM and its SIGKILL.
KILL_GRACE_S = 3.0

__all__ = ["LEASE_ENV", "hold", "hold_from_env", "lease_age"]


def lease_age(path: str) -> float:
    """Seconds since ``path`` was last touched (infinite when it is gone)."""
    try:
        return time.time() - os.stat(path).st_mtime
    except OSError:
        return float("inf")


def _watch(lease: str, lease_s: float, parent: int) -> None:
    while True:
        time.sleep(POLL_S)
        if lease_age(lease) > lease_s or os.getppid() != parent:
            os.killpg(0, signal.SIGTERM)
            time.sleep(KILL_GRACE_S)
            os.killpg(0, signal.SIGKILL)


def hold(lease: str, lease_s: float) -> threading.Thread:
    """Watch ``lease`` and this process's parent from now on (see the module)."""
    watcher = threading.Thread(
        target=_watch, args=(lease, lease_s, os.getppid()), daemon=True, name="openenv-lease"
    )
    watcher.start()
    return watcher


def hold_from_env() -> threading.Thread | None:
    """``hold`` the lease ``OPENENV_LEASE`` names, taken out of the environment (the
    server's own children are in its group already); None when it is not set."""
    value = os.environ.pop(LEASE_ENV, "")
    if not value:
        return None
    lease, _, lease_s = value.rpartition(":")
    return hold(lease, float(lease_s))
