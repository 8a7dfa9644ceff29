"""Start, wait for and stop what an upstream-style client was given as ``provider``.

Three kinds are accepted: upstream's ``ContainerProvider`` (``start_container`` /
``wait_for_ready(base_url)`` / ``stop_container``), upstream's ``RuntimeProvider``
(``start`` returning a URL / ``wait_for_ready()`` / ``stop``), and our own
``openenv.containers.Provider`` (``start`` returning a replica that is already healthy
and has its own ``stop``).

``BootstrapResult`` is what ``EnvClient.from_docker_image`` and ``from_env`` return: await
it for a connected async client, or call ``.sync()`` for a connected sync one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, Protocol, TypeVar


class _Client(Protocol):
    """What a handle needs of the ``EnvClient`` it builds (a Protocol, so that this
    module, which ``env_client`` imports, imports neither client module)."""

    async def connect(self) -> Any: ...

    async def close(self) -> None: ...

    def sync(self) -> Any: ...


ClientT = TypeVar("ClientT", bound=_Client)


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


class BootstrapResult(Coroutine[Any, Any, ClientT], Generic[ClientT]):
    """A lazy handle: ``await`` it (a connected async client) or ``.sync()`` it (a
    connected ``SyncEnvClient``). Nothing starts until one of them; it resolves once."""

    def __init__(self, build: Callable[[], ClientT]) -> None:
        self._build = build
        self._coro: Coroutine[Any, Any, ClientT] | None = None
        self._used = False

    def _take(self) -> ClientT:
        if self._used:
            raise RuntimeError("this handle was already resolved; call the factory again for another env")
        self._used = True
        return self._build()

    async def _resolve(self) -> ClientT:
        client = self._take()
        try:
            await client.connect()
        except BaseException:
            await client.close()
            raise
        return client

    def _coroutine(self) -> Coroutine[Any, Any, ClientT]:
        if self._coro is None:
            self._coro = self._resolve()
        return self._coro

    def __await__(self) -> Generator[Any, None, ClientT]:
        return self._coroutine().__await__()

    def send(self, value: Any) -> Any:
        return self._coroutine().send(value)

    def throw(self, *args: Any) -> Any:
        return self._coroutine().throw(*args)

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()

    def sync(self) -> Any:
        """The connected ``SyncEnvClient`` of the built client."""
        client = self._take()
        wrapper = client.sync()
        try:
            wrapper.connect()
        except BaseException:
            wrapper.close()
            raise
        return wrapper

    def __repr__(self) -> str:
        return f"<{type(self).__name__} pending: await it or call .sync()>"
