"""A pool of env replicas: start N, route each session to one, broadcast to all."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Self, TypeVar

from .._exceptions import ProviderError
from .._models import GENERIC_MODELS, EnvModels
from ._base import Provider, Replica

T = TypeVar("T")


class ReplicaPool:
    """N replicas of one env from one provider.

    ``acquire()`` routes a new session to the replica with the fewest leased sessions;
    ``client()`` wraps that in an ``EnvClient`` whose ``close()`` returns the lease;
    ``broadcast(fn)`` calls ``fn(base_url)`` for every replica, concurrently.

    >>> with ReplicaPool(DockerProvider("openenv-echo"), 2) as pool:  # doctest: +SKIP
    ...     with pool.client(MODELS) as env:
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

    def start(self) -> Self:
        """Start every replica (concurrently); on any failure stop those started."""
        with ThreadPoolExecutor(self.size) as pool:
            futures = [pool.submit(self.provider.start) for _ in range(self.size)]
        started, errors = [], []
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

    @property
    def urls(self) -> list[str]:
        return [r.base_url for r in self.replicas]

    def acquire(self) -> str:
        """The base URL of the least-loaded replica; pair with ``release``."""
        with self._lock:
            if not self._leases:
                raise ProviderError("the pool is not started (or was stopped)")
            url = min(self._leases, key=self._leases.__getitem__)
            self._leases[url] += 1
            return url

    def release(self, url: str) -> None:
        with self._lock:
            if self._leases.get(url, 0) > 0:
                self._leases[url] -= 1

    def load(self) -> dict[str, int]:
        """Leased sessions per replica URL."""
        with self._lock:
            return dict(self._leases)

    def client(self, models: EnvModels[Any, Any, Any] = GENERIC_MODELS, **kwargs: Any) -> Any:
        """An ``EnvClient`` on the least-loaded replica; closing it releases the lease."""
        from ..client import EnvClient

        url = self.acquire()
        client: EnvClient[Any, Any, Any] = EnvClient(url, models, **kwargs)
        client.on_close(lambda: self.release(url))
        return client

    def async_client(self, models: EnvModels[Any, Any, Any] = GENERIC_MODELS, **kwargs: Any) -> Any:
        """An ``AsyncEnvClient`` on the least-loaded replica; closing it releases the lease."""
        from ..client import AsyncEnvClient

        url = self.acquire()
        client: AsyncEnvClient[Any, Any, Any] = AsyncEnvClient(url, models, **kwargs)
        client.on_close(lambda: self.release(url))
        return client

    def broadcast(self, fn: Callable[[str], T]) -> list[T]:
        """``fn(base_url)`` for every replica, concurrently; results in replica order."""
        with ThreadPoolExecutor(max(1, len(self.replicas))) as pool:
            return list(pool.map(fn, self.urls))

    def stop(self) -> None:
        replicas, self.replicas = self.replicas, []
        with self._lock:
            self._leases = {}
        for replica in replicas:
            replica.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
