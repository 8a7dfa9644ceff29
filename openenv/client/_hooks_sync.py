"""The blocking view of a ``HookEnvClient``, and ``BootstrapResult``: a client still to start.

Upstream runs a private event loop in a thread for its sync view. Here the I/O of a
sync client is our blocking ``openenv.client.EnvClient``, so the wrapped client's
coroutines (``_reset_async``, a subclass's ``list_tools``...) never wait on a loop:
they are run to completion in the calling thread. A coroutine that does wait on real
asyncio I/O runs on an ``asyncio.Runner`` owned by this wrapper (not possible from
inside a running loop: use the async client there).

``HookEnvClient.from_docker_image`` and ``from_env`` return a ``BootstrapResult``:
await it for a connected async client, or call ``.sync()`` for a connected sync one.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from ._hooks_result import HookStepResult as StepResult
from ._hooks_result import StateT

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
T = TypeVar("T")

__all__ = ["BootstrapResult", "SyncHookEnvClient"]


class SyncHookEnvClient(Generic[ActT, ObsT, StateT]):
    """Blocking ``reset``/``step``/``state``/``close`` over a ``HookEnvClient``.

    Other async methods of the wrapped client (``list_tools``, ``call_tool``...) are
    offered as blocking methods of the same name.
    """

    def __init__(self, async_client: Any) -> None:  # a ``HookEnvClient`` (_hooks imports this module)
        self._async = async_client
        self._runner: asyncio.Runner | None = None

    @property
    def async_client(self) -> Any:
        return self._async

    def _run(self, factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
        client = self._async
        client._claim_execution_mode("sync")
        client._sync_depth += 1
        try:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return self._runner_for_loop().run(factory())
            return _drive(factory())
        finally:
            client._sync_depth -= 1

    def _runner_for_loop(self) -> asyncio.Runner:
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner

    def connect(self) -> Self:
        self._run(self._async._connect_async)
        return self

    def disconnect(self) -> None:
        self._run(self._async._disconnect_async)

    def reset(self, **kwargs: Any) -> StepResult[ObsT]:
        return self._run(lambda: self._async._reset_async(**kwargs))

    def step(self, action: ActT, **kwargs: Any) -> StepResult[ObsT]:
        return self._run(lambda: self._async._step_async(action, **kwargs))

    def state(self) -> StateT:
        state: StateT = self._run(self._async._state_async)
        return state

    def close(self) -> None:
        try:
            self._run(self._async._close_async)
        finally:
            runner, self._runner = self._runner, None
            if runner is not None:
                runner.close()

    def new_session(self) -> SyncHookEnvClient[Any, Any, Any]:
        """Another session on the same server, closed with this client."""
        wrapper: SyncHookEnvClient[Any, Any, Any] = self._run(self._async.new_session).sync()
        return wrapper

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # The hooks, for code that calls them on the wrapper.
    def _step_payload(self, action: ActT) -> dict[str, Any]:
        payload: dict[str, Any] = self._async._step_payload(action)
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ObsT]:
        result: StepResult[ObsT] = self._async._parse_result(payload)
        return result

    def _parse_state(self, payload: dict[str, Any]) -> StateT:
        state: StateT = self._async._parse_state(payload)
        return state

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._async, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def blocking(*args: Any, **kwargs: Any) -> Any:
            return self._run(lambda: attr(*args, **kwargs))

        return blocking


def _drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (its I/O is blocking) in this thread."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError(
        "a sync client call awaited asyncio I/O inside a running event loop: use the async client there"
    )

class _Client(Protocol):
    """What a handle needs of the ``EnvClient`` it builds (a Protocol, so that this
    module, which ``_hooks`` imports, needs no client module)."""

    async def connect(self) -> Any: ...

    async def close(self) -> None: ...

    def sync(self) -> Any: ...


ClientT = TypeVar("ClientT", bound=_Client)


class BootstrapResult(Coroutine[Any, Any, ClientT], Generic[ClientT]):
    """A lazy handle: ``await`` it (a connected async client) or ``.sync()`` it (a
    connected ``SyncHookEnvClient``). Nothing starts until one of them; it resolves once."""

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
        """The connected ``SyncHookEnvClient`` of the built client."""
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
