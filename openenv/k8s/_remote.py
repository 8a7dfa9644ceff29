"""``RemoteReplica``: an env server this process did not start, alive while its
``/health`` answers; and ``resolve``: a DNS name's addresses as base URLs."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request

#: Seconds a ``/health`` answer (or its absence) is trusted before asking again.
HEALTH_TTL_S = 1.0


class RemoteReplica:
    """An env server at ``base_url`` that this process neither started nor stops."""

    def __init__(self, base_url: str, health_timeout_s: float = 1.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.health_timeout_s = health_timeout_s
        self._checked_at = -HEALTH_TTL_S
        self._healthy = False
        self._lock = threading.Lock()

    def alive(self) -> bool:
        """Whether ``/health`` answered 200 (within the last ``HEALTH_TTL_S`` seconds)."""
        with self._lock:
            if time.monotonic() - self._checked_at < HEALTH_TTL_S:
                return self._healthy
            try:
                with urllib.request.urlopen(f"{self.base_url}/health", timeout=self.health_timeout_s) as r:
                    self._healthy = r.status == 200
            except (urllib.error.URLError, OSError):
                self._healthy = False
            self._checked_at = time.monotonic()
            return self._healthy

    def suspect(self) -> None:
        """Forget the last health answer: the next ``alive()`` asks the server."""
        with self._lock:
            self._checked_at = -HEALTH_TTL_S

    def logs(self, tail: int = 50) -> str:
        return f"(the logs of {self.base_url} are on its host)"

    def stop(self) -> None:
        """Nothing to stop: the server's owner (Kubernetes, a host) runs it."""


def resolve(service: str, port: int, scheme: str = "http") -> list[str]:
    """The base URL of every address ``service`` resolves to, sorted; [] if none."""
    try:
        infos = socket.getaddrinfo(service, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return []
    hosts = sorted({str(info[4][0]) for info in infos})
    return [f"{scheme}://[{h}]:{port}" if ":" in h else f"{scheme}://{h}:{port}" for h in hosts]
