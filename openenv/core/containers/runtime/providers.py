"""``ContainerProvider`` / ``RuntimeProvider`` (upstream's interfaces) and ``LocalDockerProvider``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any, Self

from ....containers import wait_healthy

__all__ = ["ContainerProvider", "LocalDockerProvider", "RuntimeProvider"]

#: ``start_container`` options passed on to our ``DockerProvider``.
_DOCKER_OPTIONS = ("cpus", "memory", "start_timeout_s", "labels", "client")


class ContainerProvider(ABC):
    """Runs one container at a time: ``start_container`` -> base URL, ``stop_container``."""

    @abstractmethod
    def start_container(
        self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any
    ) -> str:
        """Start ``image``; returns the server's base URL."""

    @abstractmethod
    def stop_container(self) -> None:
        """Stop and remove the container ``start_container`` started."""

    @abstractmethod
    def wait_for_ready(self, base_url: str, timeout_s: float = 30.0) -> None:
        """Return once ``base_url/health`` answers 200."""

    def close(self) -> None:
        """Release what the provider holds besides the container (nothing by default)."""
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class RuntimeProvider(ABC):
    """Runs an env as a process it owns: ``start`` -> base URL, ``stop``."""

    @abstractmethod
    def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any) -> str:
        """Start the env; returns the server's base URL."""

    @abstractmethod
    def stop(self) -> None:
        """Stop what ``start`` started."""

    @abstractmethod
    def wait_for_ready(self, timeout_s: float = 30.0) -> None:
        """Return once the server answers ``/health``."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class LocalDockerProvider(ContainerProvider):
    """Run an env image on the local Docker engine (our ``DockerProvider``).

    The host port is a free one chosen by Docker; ``port=`` is refused rather than
    ignored. ``cpus``, ``memory``, ``start_timeout_s``, ``labels`` pass through.
    """

    def __init__(self) -> None:
        self._replica: Any = None

    def start_container(
        self, image: str, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any
    ) -> str:
        from ....containers import DockerProvider

        if port is not None:
            raise ValueError("LocalDockerProvider publishes on a free host port chosen by Docker; drop port=")
        unknown = sorted(set(kwargs) - set(_DOCKER_OPTIONS))
        if unknown:
            raise TypeError(f"start_container() got options it does not know: {', '.join(unknown)}")
        if self._replica is not None:
            raise RuntimeError("this provider already runs a container: stop_container() first")
        self._replica = DockerProvider(image, env=env_vars, **kwargs).start()
        return str(self._replica.base_url)

    def stop_container(self) -> None:
        replica, self._replica = self._replica, None
        if replica is not None:
            replica.stop()

    def wait_for_ready(self, base_url: str, timeout_s: float = 30.0) -> None:
        replica = self._replica
        wait_healthy(
            base_url,
            timeout_s=timeout_s,
            alive=(lambda: True) if replica is None else replica.alive,
            logs=(lambda: "") if replica is None else replica.logs,
            what=f"container at {base_url}",
        )
