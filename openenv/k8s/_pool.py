"""A client-side pool over env servers someone else runs: a list of URLs, or a DNS
name that resolves to many addresses (a headless Service).

``UrlPool`` is a ``ReplicaPool`` (its routing: each session leases the least-loaded
live replica and stays pinned to it) whose replicas are ``RemoteReplica``s: alive is a
``/health`` answer, and stop only forgets them. ``pool.client(models)`` opens a session
on a replica; when that replica dies, the session's calls raise ``ReplicaLost`` and the
pool's other sessions go on, while new ones go to the live replicas. ``refresh()``
re-reads the DNS name, so pods that Kubernetes adds or replaces join the pool.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit

from .._exceptions import ProviderError, ReplicaLost, TransportError
from .._models import GENERIC_MODELS, EnvModels
from .._protocol import AnyReply
from ..client import EnvClient
from ..containers import PoolLease, ReplicaPool

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")

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


class _NoStart:
    def start(self) -> RemoteReplica:
        raise ProviderError("an UrlPool does not start servers; it routes to running ones")


class UrlPool(ReplicaPool):
    """Sessions over running env servers, least-loaded first, pinned to their replica.

    >>> with UrlPool(service="openenv-echo.default.svc.cluster.local") as pool:  # doctest: +SKIP
    ...     with pool.client(MODELS) as env:
    ...         env.reset()

    Args:
        urls: the servers' base URLs.
        service: or a DNS name whose addresses are the servers (a headless Service).
        port: the servers' port when ``service`` is given.
        health_timeout_s: how long a ``/health`` check may take.
        refresh_s: with ``service``, ``client()`` re-reads the DNS name when the last
            read is older than this (pods that Kubernetes adds or replaces join).
    """

    def __init__(
        self,
        urls: Sequence[str] = (),
        *,
        service: str | None = None,
        port: int = 8000,
        scheme: str = "http",
        health_timeout_s: float = 1.0,
        refresh_s: float = 5.0,
    ) -> None:
        if bool(urls) == bool(service):
            raise ValueError("give either urls or service")
        for url in urls:
            if urlsplit(url).scheme not in ("http", "https"):
                raise ValueError(f"{url!r} is not an http(s) URL")
        super().__init__(_NoStart(), max(1, len(urls)))
        self.fixed_urls = [u.rstrip("/") for u in urls]
        self.service = service
        self.port = port
        self.scheme = scheme
        self.health_timeout_s = health_timeout_s
        self.refresh_s = refresh_s
        self._refreshed_at = 0.0

    def open(self) -> Self:
        """Find the replicas; raises ``ProviderError`` if none answers ``/health``."""
        self.refresh()
        if not any(r.alive() for r in self.replicas):
            raise ProviderError(f"no replica of {self.service or self.fixed_urls} answers /health")
        return self

    def refresh(self) -> list[str]:
        """Re-read the addresses (a DNS name's change as pods come and go): new ones join;
        gone ones leave once their sessions end. Returns the current URLs."""
        found = self.fixed_urls or resolve(self.service or "", self.port, self.scheme)
        self._refreshed_at = time.monotonic()
        with self._lock:
            known = {r.base_url for r in self.replicas}
            for url in found:
                if url not in known:
                    self.replicas.append(RemoteReplica(url, self.health_timeout_s))
                    self._leases[url] = 0
            gone = [r for r in self.replicas if r.base_url not in found and not self._leases.get(r.base_url)]
            for replica in gone:
                self.replicas.remove(replica)
                self._leases.pop(replica.base_url, None)
            self.size = len(self.replicas)
        return self.urls

    def client(
        self,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        **kwargs: Any,
    ) -> EnvClient[ActT, ObsT, StateT]:
        """A connected client on the least-loaded live replica; ``close()`` ends the lease.

        A replica that refuses the connection and fails its health check is skipped
        (each replica at most once). Its calls raise ``ReplicaLost`` if the replica dies.
        """
        if self.service and time.monotonic() - self._refreshed_at > self.refresh_s:
            self.refresh()
        last: Exception | None = None
        for _ in range(max(1, len(self.replicas))):
            lease = self.start()
            client: PinnedClient[ActT, ObsT, StateT] = PinnedClient(lease.base_url, models, **kwargs)
            client.lease = lease
            client.on_close(lease.stop)
            try:
                return client.connect()
            except ReplicaLost as exc:
                last = exc
                client.close()
            except BaseException:
                client.close()
                raise
        assert last is not None
        raise last


class PinnedClient(EnvClient[ActT, ObsT, StateT]):
    """An ``EnvClient`` on one pool replica: a transport failure while the replica does
    not answer ``/health`` becomes ``ReplicaLost``."""

    lease: PoolLease | None = None

    def connect(self) -> Self:
        try:
            return super().connect()
        except TransportError as exc:
            raise self._lost(exc) from exc

    def _call(self, message: dict[str, Any], timeout_s: float | None = None) -> AnyReply:
        try:
            return super()._call(message, timeout_s)
        except TransportError as exc:
            raise self._lost(exc) from exc

    def _lost(self, exc: TransportError) -> TransportError:
        replica = self.lease.replica if self.lease is not None else None
        if replica is None or isinstance(exc, ReplicaLost):
            return exc
        if isinstance(replica, RemoteReplica):
            replica.suspect()
        if replica.alive():
            return exc
        return ReplicaLost(f"replica {self.base_url} is gone ({exc}); the pool routes new sessions to others",
                           self.base_url)
