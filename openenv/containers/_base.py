"""The provider interface: something that starts env servers and hands back URLs.

A ``Provider`` starts ``Replica``s; a replica is one running server (a container or a
process) with a ``base_url``, its recent logs, and ``stop()``. Both are typing protocols:
the clients depend on this module only (``openenv.containers._base``), never on the
pool or the providers, so the dependency runs one way. Readiness is a ``/health``
poll with exponential backoff, never a fixed sleep; a replica that dies while starting
fails at once with its last log lines.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from .._exceptions import StartupFailed
from .._health import health_error

#: The port env servers listen on inside containers (upstream's convention).
CONTAINER_PORT = 8000


@runtime_checkable
class Replica(Protocol):
    """One running env server: what a client needs from a provider's replica.

    Any object with these members is a replica (``ReplicaBase`` is a convenient base).
    """

    base_url: str

    def alive(self) -> bool:
        """Whether the server process/container is still running."""
        ...

    def logs(self, tail: int = 50) -> str:
        """Its last ``tail`` lines of output."""
        ...

    def stop(self) -> None:
        """Stop it (or give it back) and release its resources. Idempotent; never raises."""
        ...


@runtime_checkable
class Provider(Protocol):
    """Starts replicas of one env: ``EnvClient.from_provider(provider)`` calls ``start()``
    and ``stop()``s the replica when the client closes. ``DockerProvider``,
    ``LocalProcessProvider`` and ``ReplicaPool`` (a lease on its least-loaded replica)
    are providers; so is any object with this method."""

    def start(self) -> Replica:
        """Start one replica and return it once ``/health`` answers 200."""
        ...


class ReplicaBase(abc.ABC):
    """Base for replicas that own a server: readiness wait and ``with`` support."""

    base_url: str

    @abc.abstractmethod
    def alive(self) -> bool:
        """Whether the server process/container is still running."""

    @abc.abstractmethod
    def logs(self, tail: int = 50) -> str:
        """Its last ``tail`` lines of output."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop it and release its resources. Idempotent; never raises."""

    def wait_ready(self, timeout_s: float, what: str) -> None:
        """Wait for ``/health``; on any failure stop this replica and re-raise."""
        try:
            wait_healthy(self.base_url, timeout_s=timeout_s, alive=self.alive, logs=self.logs, what=what)
        except BaseException:
            self.stop()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def wait_healthy(
    base_url: str,
    *,
    timeout_s: float,
    alive: Callable[[], bool] = lambda: True,
    logs: Callable[[], str] = str,
    what: str = "the server",
) -> float:
    """Poll ``/health`` until 200; returns seconds waited.

    Every 25 ms for the first 2 s (a server usually starts within that), then backing
    off to every 500 ms.

    Raises ``StartupFailed`` with the last log lines if the server dies (``alive()`` is
    False) or the timeout passes. The one wait for a server's health: providers, tests and
    examples all use it.
    """
    start = time.monotonic()
    deadline = start + timeout_s
    delay = 0.025
    last_error = "no answer yet"
    while True:
        error = health_error(base_url, timeout_s=2)
        if error is None:
            return time.monotonic() - start
        last_error = error
        if not alive():
            raise StartupFailed(f"{what} exited before it became healthy", logs())
        if time.monotonic() + delay > deadline:
            raise StartupFailed(
                f"{what} was not healthy at {base_url}/health within {timeout_s} s ({last_error})", logs()
            )
        time.sleep(delay)
        if time.monotonic() - start > 2.0:
            delay = min(delay * 1.6, 0.5)
