"""The lease guard a Monarch replica runs under.

    python -m openenv.containers._lease_guard LEASE_FILE LEASE_S serve TARGET ...

runs ``openenv serve TARGET ...`` in this process, beside a thread that ends this
process group (the server and any workers of it) when the lease file is older than
``LEASE_S`` seconds or gone, or when this process's parent (the host actor's process)
is gone: SIGTERM, then SIGKILL ``KILL_GRACE_S`` later. The host actor touches the file
on every heartbeat (``_monarch_host.ReplicaHost``), so a replica never outlives the
host that leased it. The replica is started in a session of its own, so the group is
the replica's alone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Sequence

#: Seconds between looks at the lease and the parent.
POLL_S = 0.25
#: Seconds between the group's SIGTERM and its SIGKILL.
KILL_GRACE_S = 3.0

__all__ = ["lease_age", "main"]


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


def main(argv: Sequence[str]) -> int:
    """``argv``: the lease file, its seconds, then the ``openenv`` command to run."""
    lease, lease_s, command = argv[0], float(argv[1]), list(argv[2:])
    watcher = threading.Thread(
        target=_watch, args=(lease, lease_s, os.getppid()), daemon=True, name="openenv-lease-guard"
    )
    watcher.start()
    sys.argv = ["openenv", *command]
    from openenv.cli import main as openenv_main

    return openenv_main(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
