"""One env at a time, started and stopped in place (upstream OpenEnv's provider shapes).

``ContainerProvider`` (``start_container`` -> URL, ``wait_for_ready(url)``,
``stop_container``) and ``RuntimeProvider`` (``start`` -> URL, ``wait_for_ready()``,
``stop``) are the interfaces; ``LocalDockerProvider`` runs an image with our
``DockerProvider``. ``ProviderHandle`` starts and stops any of them, or one of our
``Provider``s (whose ``start`` returns a replica already healthy), exactly once.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from ._base import wait_healthy

__all__ = ["ContainerProvider", "LocalDockerProvider", "ProviderHandle", "RuntimeProvider"]

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
        from ._docker import DockerProvider

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


class ProviderHandle:
    """One started provider: its URL and how to stop it (exactly once)."""

    def __init__(self, provider: Any) -> None:
        self.provider = provider
        self._replica: Any = None
        self.started = False

    def start(self) -> str:
        """Start the provider with what it was constructed with; returns the base URL."""
        p = self.provider
        if hasattr(p, "start_container"):
            missing = _required_parameters(p.start_container)
            if missing:
                raise ValueError(
                    f"{type(p).__name__}.start_container() needs {', '.join(missing)}: start it "
                    "yourself and pass base_url, or give the provider its image up front"
                )
            url = p.start_container()
            self.started = True
            p.wait_for_ready(url)
            return str(url)
        if not hasattr(p, "start"):
            raise TypeError("provider must define start_container() or start()")
        out = p.start()
        self.started = True
        if isinstance(out, str):  # upstream RuntimeProvider
            p.wait_for_ready()
            return out
        self._replica = out  # our Provider: the replica is healthy when returned
        return str(out.base_url)

    def adopt(self, replica: Any) -> None:
        """Stop ``replica`` (one of our providers' replicas) rather than the provider."""
        self._replica = replica
        self.started = True

    def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        if self._replica is not None:
            replica, self._replica = self._replica, None
            replica.stop()
        elif hasattr(self.provider, "stop_container"):
            self.provider.stop_container()
        elif hasattr(self.provider, "stop"):
            self.provider.stop()


def _required_parameters(fn: Callable[..., Any]) -> list[str]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    p_ = inspect.Parameter
    kinds = (p_.POSITIONAL_ONLY, p_.POSITIONAL_OR_KEYWORD, p_.KEYWORD_ONLY)
    return [p.name for p in params if p.default is p_.empty and p.kind in kinds]
