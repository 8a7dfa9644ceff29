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

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar
from urllib.parse import urlsplit

from .._exceptions import ProviderError, ReplicaLost
from .._models import GENERIC_MODELS, EnvModels
from ..client import EnvClient
from ..containers import ReplicaPool
from ._pinned import PinnedClient
from ._remote import RemoteReplica, resolve

if TYPE_CHECKING:
    from ..client._async import AsyncEnvClient

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


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

    async def aclient(
        self,
        models: EnvModels[ActT, ObsT, StateT] = GENERIC_MODELS,  # type: ignore[assignment]
        **kwargs: Any,
    ) -> AsyncEnvClient[ActT, ObsT, StateT]:
        """``client()`` for ``AsyncEnvClient``: the same lease, routing and ``ReplicaLost``."""
        from ._pinned_async import PinnedAsyncClient

        if self.service and time.monotonic() - self._refreshed_at > self.refresh_s:
            await asyncio.to_thread(self.refresh)
        last: Exception | None = None
        for _ in range(max(1, len(self.replicas))):
            lease = await asyncio.to_thread(self.start)
            aenv: PinnedAsyncClient[ActT, ObsT, StateT] = PinnedAsyncClient(lease.base_url, models, **kwargs)
            aenv.lease = lease
            aenv.on_close(lease.stop)
            try:
                return await aenv.connect()
            except ReplicaLost as exc:
                last = exc
                await aenv.close()
            except BaseException:
                await aenv.close()
                raise
        assert last is not None
        raise last
