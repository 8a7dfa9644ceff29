"""``RemoteReplica``: an env server this process did not start, alive while its
``/health`` answers; and ``resolve``: a DNS name's addresses as base URLs."""

from __future__ import annotations

import socket

from .._health import CachedHealth


class RemoteReplica:
    """An env server at ``base_url`` that this process neither started nor stops."""

    def __init__(self, base_url: str, health_timeout_s: float = 1.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.health_timeout_s = health_timeout_s
        self._health = CachedHealth(self.base_url, health_timeout_s)

    def alive(self) -> bool:
        """Whether ``/health`` answered 200 (within the last ``HEALTH_TTL_S`` seconds)."""
        return self._health()

    def suspect(self) -> None:
        """Forget the last health answer: the next ``alive()`` asks the server."""
        self._health.forget()

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
