"""The host side of ``MonarchProvider``: ``ReplicaHost``, one Monarch actor per host.

The actor starts ``openenv serve`` replicas on its host as child processes, each in a
session of its own under a lease (``_lease_guard``: the replica's process group ends
when its lease file goes stale or away, or the actor's process is gone), renews
every lease on each heartbeat, reports which replicas still run, serves their logs and
stops them. With no heartbeat for ``lease_s`` it stops them all and exits. The
controller side (the provider, its replicas and pool) is ``_monarch``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque

from .._extras import require
from ._lease_guard import LEASE_ENV
from ._local import free_port

require("monarch.actor", extra="train", feature="env replicas on Monarch hosts")

from monarch.actor import Actor, endpoint  # noqa: E402

__all__ = ["ReplicaHost"]


class _Served:
    def __init__(self, proc: subprocess.Popen[bytes], lease: str, log: str) -> None:
        self.proc, self.lease, self.log = proc, lease, log


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


class ReplicaHost(Actor):  # type: ignore[misc]
    """One per host: starts, reports and stops the ``openenv serve`` replicas there."""

    def __init__(self, lease_s: float, reap_host: bool) -> None:
        self.lease_s = lease_s
        self.host_pid = os.getppid() if reap_host else 0
        self.dir = tempfile.mkdtemp(prefix="openenv-replicas-")
        self.served: dict[int, _Served] = {}
        self.next_id = 0
        self.beat = time.monotonic()
        self.lock = threading.Lock()
        threading.Thread(target=self._watchdog, daemon=True, name="openenv-lease").start()

    def _watchdog(self) -> None:
        """No heartbeat for ``lease_s``: the controller is gone; stop every replica and
        exit (killing the host's worker process too when the controller started it)."""
        while True:
            time.sleep(0.5)
            if time.monotonic() - self.beat > self.lease_s:
                self._stop_all()
                if self.host_pid and os.getppid() == self.host_pid:
                    with contextlib.suppress(OSError):  # a host of a job started for us
                        os.kill(self.host_pid, signal.SIGKILL)
                os._exit(0)

    def _stop_all(self) -> None:
        with self.lock:
            served, self.served = self.served, {}
        for s in served.values():
            with contextlib.suppress(OSError):
                os.unlink(s.lease)
            _kill_group(s.proc)
        shutil.rmtree(self.dir, ignore_errors=True)

    @endpoint  # type: ignore[untyped-decorator]
    def start(
        self, target: str, env: dict[str, str], python: str, workers: int, bind: str, advertise: str
    ) -> tuple[int, str, int]:
        """Start one replica; ``(id, base URL, pid)`` at once (the caller waits for health)."""
        self.beat = time.monotonic()
        with self.lock:
            rid, self.next_id = self.next_id, self.next_id + 1
        port = free_port(bind)
        lease = os.path.join(self.dir, f"{rid}.lease")
        log = os.path.join(self.dir, f"{rid}.log")
        open(lease, "w").close()
        argv = [python, "-m", "openenv", "serve", target]
        argv += ["--host", bind, "--port", str(port), "--workers", str(workers)]
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env, LEASE_ENV: f"{lease}:{self.lease_s}"},
                start_new_session=True,
            )
        with self.lock:
            self.served[rid] = _Served(proc, lease, log)
        name = advertise or (socket.getfqdn() if bind in ("0.0.0.0", "") else bind)
        return rid, f"http://{name}:{port}", proc.pid

    @endpoint  # type: ignore[untyped-decorator]
    def heartbeat(self) -> dict[int, bool]:
        """Renew every replica's lease; which replicas still run."""
        self.beat = time.monotonic()
        now = time.time()
        with self.lock:
            served = dict(self.served)
        for s in served.values():
            with contextlib.suppress(OSError):
                os.utime(s.lease, (now, now))
        return {rid: s.proc.poll() is None for rid, s in served.items()}

    def _logs(self, rid: int, tail: int) -> str:
        s = self.served.get(rid)
        if s is None:
            return ""
        try:
            with open(s.log, errors="replace") as f:
                return "".join(deque(f, maxlen=tail))
        except OSError:
            return ""

    @endpoint  # type: ignore[untyped-decorator]
    def logs(self, rid: int, tail: int) -> str:
        return self._logs(rid, tail)

    def _stop(self, rid: int) -> None:
        with self.lock:
            s = self.served.pop(rid, None)
        if s is not None:
            with contextlib.suppress(OSError):
                os.unlink(s.lease)
            _kill_group(s.proc)
            with contextlib.suppress(OSError):
                os.unlink(s.log)

    @endpoint  # type: ignore[untyped-decorator]
    def stop_one(self, rid: int) -> None:
        self._stop(rid)

    @endpoint  # type: ignore[untyped-decorator]
    def pid(self) -> int:
        return os.getpid()

    @endpoint  # type: ignore[untyped-decorator]
    def stop_all(self) -> None:
        self._stop_all()
