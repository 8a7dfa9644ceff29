"""``BootstrapResult`` is what ``EnvClient.from_docker_image`` and ``from_env`` return: await
it for a connected async client, or call ``.sync()`` for a connected sync one.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, Protocol, TypeVar

from ..containers import ProviderHandle

__all__ = ["BootstrapResult", "ProviderHandle"]


class _Client(Protocol):
    """What a handle needs of the ``EnvClient`` it builds (a Protocol, so that this
    module, which ``env_client`` imports, imports neither client module)."""

    async def connect(self) -> Any: ...

    async def close(self) -> None: ...

    def sync(self) -> Any: ...


ClientT = TypeVar("ClientT", bound=_Client)


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
