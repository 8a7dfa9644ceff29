"""A pool of env replicas: start N, lease each session to one, broadcast to all."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Self, TypeVar

from .._exceptions import ProviderError
from ._base import Provider, Replica

T = TypeVar("T")


class PoolLease:
    """A ``Replica`` lent by a pool: the least-loaded replica's URL; ``stop()`` gives the
    lease back (the replica keeps running for the pool's other sessions)."""

    def __init__(self, pool: ReplicaPool, replica: Replica) -> None:
        self._pool = pool
        self.replica = replica
        self.base_url = replica.base_url
        self._released = False

    def alive(self) -> bool:
        return not self._released and self.replica.alive()

    def logs(self, tail: int = 50) -> str:
        return self.replica.logs(tail)

    def stop(self) -> None:
        if not self._released:
            self._released = True
            self._pool.release(self.base_url)


class ReplicaPool:
    """N replicas of one env from one provider; itself a ``Provider`` of leases.

    ``open()`` (or ``with``) starts every replica. ``start()`` leases the replica with
    the fewest leased sessions (the ``Provider`` method), so a client routed by the pool
    is ``EnvClient.from_provider(pool, MODELS)``: its ``close()`` returns the lease.
    ``broadcast(fn)`` calls ``fn(base_url)`` for every replica, concurrently.

    >>> with ReplicaPool(DockerProvider("openenv-echo"), 2) as pool:  # doctest: +SKIP
    ...     with EnvClient.from_provider(pool, MODELS) as env:
    ...         env.reset()
    """

    def __init__(self, provider: Provider, replicas: int) -> None:
        if replicas < 1:
            raise ValueError("a pool needs at least one replica")
        self.provider = provider
        self.size = replicas
        self.replicas: list[Replica] = []
        self._leases: dict[str, int] = {}
        self._lock = threading.Lock()

    def open(self) -> Self:
        """Start every replica (concurrently); on any failure stop those started."""
        with ThreadPoolExecutor(self.size) as pool:
            futures = [pool.submit(self.provider.start) for _ in range(self.size)]
        started: list[Replica] = []
        errors: list[Exception] = []
        for f in futures:
            try:
                started.append(f.result())
            except Exception as exc:
                errors.append(exc)
        if errors:
            for replica in started:
                replica.stop()
            raise errors[0]
        self.replicas = started
        self._leases = {r.base_url: 0 for r in started}
        return self

    def start(self) -> PoolLease:
        """A lease on the least-loaded replica (``Provider.start``); ``stop()`` returns it."""
        url = self.acquire()
        replica = next(r for r in self.replicas if r.base_url == url)
        return PoolLease(self, replica)

    @property
    def urls(self) -> list[str]:
        return [r.base_url for r in self.replicas]

    def acquire(self) -> str:
        """The base URL of the least-loaded live replica; pair with ``release``."""
        with self._lock:
            if not self._leases:
                raise ProviderError("the pool is not open (use `with ReplicaPool(...)` or .open())")
            by_url = {r.base_url: r for r in self.replicas}
            for url in sorted(self._leases, key=self._leases.__getitem__):
                if by_url[url].alive():  # a dead replica gets no new sessions
                    self._leases[url] += 1
                    return url
            raise ProviderError(f"no replica of the pool is alive ({len(self._leases)} known)")

    def release(self, url: str) -> None:
        with self._lock:
            if self._leases.get(url, 0) > 0:
                self._leases[url] -= 1

    def load(self) -> dict[str, int]:
        """Leased sessions per replica URL."""
        with self._lock:
            return dict(self._leases)

    def broadcast(self, fn: Callable[[str], T]) -> list[T]:
        """``fn(base_url)`` for every replica, concurrently; results in replica order."""
        with ThreadPoolExecutor(max(1, len(self.replicas))) as pool:
            return list(pool.map(fn, self.urls))

    def stop(self) -> None:
        """Stop every replica."""
        replicas, self.replicas = self.replicas, []
        with self._lock:
            self._leases = {}
        for replica in replicas:
            replica.stop()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
