"""``HookEnvClient``: a client whose subclass maps actions and replies with three hooks.

It is the client shape upstream OpenEnv's env packages are written against (named
``EnvClient`` by ``openenv.core``): a subclass overrides ``_step_payload(action) ->
dict``, ``_parse_result(payload) -> StepResult`` and ``_parse_state(payload) -> State``,
and gets ``async with``, ``await reset/step/state/close``, ``.sync()``, a plain call
from sync code, ``from_docker_image``, ``from_env``, ``provider=`` and ``new_session``.
The I/O is our own clients': ``AsyncEnvClient`` in async code, the blocking
``EnvClient`` in sync code (no event loop in a thread). The hooks sit at the edge: the
payload they build is sent as the step's ``data``; the reply's ``data``
(``observation``, ``reward``, ``done``, and ``truncated`` / ``metadata`` when set) is
what ``_parse_result`` receives. Request ids, deadlines and typed errors
(``openenv.OpenEnvError`` and below) are ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from .._models import GENERIC_MODELS
from .._models import StepResult as _StepResult
from .._space import space_subdomain
from ..containers import ProviderHandle
from ._base import ws_url
from ._hooks_result import HookStepResult as StepResult
from ._hooks_result import StateT
from ._hooks_sync import BootstrapResult

if TYPE_CHECKING:
    from ._async import AsyncEnvClient as _Async
    from ._hooks_sync import SyncHookEnvClient
    from ._sync import EnvClient as _Blocking

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
ClientT = TypeVar("ClientT", bound="HookEnvClient[Any, Any, Any]")
T = TypeVar("T")

_MODES = ("simulation", "production")

__all__ = ["HookEnvClient", "reply_payload"]


def reply_payload(result: _StepResult[Any]) -> dict[str, Any]:
    """A reply's ``data`` as upstream's hooks read it, from our client's result."""
    payload: dict[str, Any] = {
        "observation": result.observation,
        "reward": result.reward,
        "done": result.done,
    }
    if result.truncated:
        payload["truncated"] = True
    if result.metadata:
        payload["metadata"] = result.metadata
    return payload


class HookEnvClient(ABC, Generic[ActT, ObsT, StateT]):
    """Base class of hook-based env clients (async first; ``.sync()`` for blocking use).

    Args:
        base_url: the server (``http(s)://`` or ``ws(s)://``); may be omitted with a
            ``provider`` that can start itself.
        connect_timeout_s: seconds for the connection and handshake.
        message_timeout_s: seconds each call may take (sent as its deadline to a server
            with our extensions).
        max_message_size_mb: largest reply accepted.
        websocket_ping_interval_s, websocket_ping_timeout_s: accepted for upstream
            compatibility; our transport does not send pings.
        provider: starts (and on ``close`` stops) the server: upstream's
            ``ContainerProvider`` or ``RuntimeProvider``, or ours.
        mode: ``"simulation"`` (default) or ``"production"`` (MCP clients).
        headers: extra handshake headers (``Authorization`` for a private Space).
    """

    def __init__(
        self,
        base_url: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 60.0,
        max_message_size_mb: float = 100.0,
        websocket_ping_interval_s: float | None = 20.0,
        websocket_ping_timeout_s: float | None = 20.0,
        provider: Any = None,
        mode: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if base_url is None and provider is None:
            raise ValueError("EnvClient needs a base_url or a provider")
        mode = (mode or "simulation").lower()
        if mode not in _MODES:
            raise ValueError(f"mode must be 'simulation' or 'production', not {mode!r}")
        self._mode = mode
        self._connect_timeout = connect_timeout_s
        self._message_timeout = message_timeout_s
        self._max_message_size = int(max_message_size_mb * 1024 * 1024)
        self._websocket_ping_interval_s = websocket_ping_interval_s
        self._websocket_ping_timeout_s = websocket_ping_timeout_s
        self._headers = headers
        self._provider = provider
        self._handle = ProviderHandle(provider) if provider is not None else None
        if self._handle is not None:
            # A provider given with a URL was started by the caller: close() stops it.
            self._handle.started = base_url is not None
        self._start_provider_on_connect = base_url is None
        self._base_url: str | None = None
        self._ws_url: str | None = None
        self._aio: _Async[Any, Any, Any] | None = None
        self._blocking: _Blocking[Any, Any, Any] | None = None
        self._execution_mode: str | None = None
        self._sync_depth = 0
        self._sync_client: SyncHookEnvClient[ActT, ObsT, StateT] | None = None
        self._child_clients: list[HookEnvClient[Any, Any, Any]] = []
        if base_url is not None:
            self._set_base_url(base_url)

    # --- configuration --------------------------------------------------------------

    @property
    def base_url(self) -> str | None:
        """The server's URL without a trailing slash (``None`` until a provider started)."""
        return self._base_url

    def _set_base_url(self, base_url: str) -> None:
        self._base_url = base_url.rstrip("/")
        self._ws_url = ws_url(base_url)

    def _client_options(self) -> dict[str, Any]:
        return {
            "timeout_s": self._message_timeout,
            "connect_timeout_s": self._connect_timeout,
            "max_frame_bytes": self._max_message_size,
            "headers": self._headers,
        }

    def _start_provider_if_needed(self) -> None:
        if self._ws_url is not None:
            return
        if self._handle is None:
            raise RuntimeError("EnvClient has no base URL or provider")
        self._set_base_url(self._handle.start())

    # --- sync / async dispatch -----------------------------------------------------

    def _claim_execution_mode(self, mode: str) -> None:
        if self._execution_mode is None:
            self._execution_mode = mode
        elif self._execution_mode != mode:
            raise RuntimeError(
                f"this client is in {self._execution_mode} use: "
                "create another client to mix sync and async code"
            )

    def _dispatch(self, factory: Callable[[], Coroutine[Any, Any, T]]) -> Any:
        """An awaitable in async code; the result itself in sync code."""
        if self._sync_depth:
            return factory()  # inside a sync call (a subclass awaiting self.step): await it
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        if running and self._execution_mode != "sync":
            self._claim_execution_mode("async")
            return factory()
        return self._run_sync(factory)

    def _run_sync(self, factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
        if self._execution_mode == "async":
            # A client made in asyncio.run(...) and then used from sync code: its
            # async connection died with that loop.
            self._aio = None
        self._execution_mode = "sync"
        return self.sync()._run(factory)

    # --- connections ---------------------------------------------------------------

    async def _connection(self) -> Any:
        """Our client for the current mode, connected."""
        if self._execution_mode == "sync":
            if self._blocking is None:
                from ._sync import EnvClient as Blocking

                self._start_provider_if_needed()
                client: Any = Blocking(self._base_url or "", GENERIC_MODELS, **self._client_options())
                client.url = self._ws_url or ""
                self._blocking = client.connect()
            return self._blocking
        if self._aio is None:
            from ._async import AsyncEnvClient as Async

            self._start_provider_if_needed()
            aclient: Any = Async(self._base_url or "", GENERIC_MODELS, **self._client_options())
            aclient.url = self._ws_url or ""
            await aclient.connect()
            self._aio = aclient
        return self._aio

    async def _io(self, call: Callable[[Any], Any]) -> Any:
        """Run ``call(connection)``: awaited on the async client, direct on the blocking one."""
        out = call(await self._connection())
        if inspect.isawaitable(out):
            out = await out
        return out

    def connect(self) -> Any:
        return self._dispatch(self._connect_async)

    async def _connect_async(self) -> Self:
        try:
            await self._connection()
        except BaseException:
            await self._close_async()
            raise
        return self

    def disconnect(self) -> Any:
        return self._dispatch(self._disconnect_async)

    async def _disconnect_async(self) -> None:
        aio, self._aio = self._aio, None
        blocking, self._blocking = self._blocking, None
        if aio is not None:
            await aio.close()
        if blocking is not None:
            blocking.close()

    # --- the hooks upstream env clients implement ----------------------------------

    @abstractmethod
    def _step_payload(self, action: ActT) -> dict[str, Any]:
        """The action as the JSON ``data`` of a ``step`` message."""

    @abstractmethod
    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ObsT]:
        """A reply's ``data`` (``observation``, ``reward``, ``done``) as a ``StepResult``."""

    @abstractmethod
    def _parse_state(self, payload: dict[str, Any]) -> StateT:
        """A ``state`` reply's ``data`` as the env's state."""

    # --- the protocol --------------------------------------------------------------

    def reset(self, **kwargs: Any) -> Any:
        """Start an episode; keyword arguments reach the env's ``reset``."""
        return self._dispatch(lambda: self._reset_async(**kwargs))

    async def _reset_async(self, **kwargs: Any) -> StepResult[ObsT]:
        result = await self._io(lambda c: c.reset(**kwargs))
        return self._parse_result(reply_payload(result))

    def step(self, action: ActT, **kwargs: Any) -> Any:
        return self._dispatch(lambda: self._step_async(action, **kwargs))

    async def _step_async(self, action: ActT, **kwargs: Any) -> StepResult[ObsT]:
        payload = self._step_payload(action)
        result = await self._io(lambda c: c.step(payload))
        return self._parse_result(reply_payload(result))

    def state(self) -> Any:
        return self._dispatch(self._state_async)

    async def _state_async(self) -> StateT:
        data = await self._io(lambda c: c.state())
        return self._parse_state(data)

    def close(self) -> Any:
        return self._dispatch(self._close_async)

    async def _close_async(self) -> None:
        """Close child sessions, the connection, then stop the provider (if any)."""
        children, self._child_clients = self._child_clients, []
        try:
            for child in children:
                await _quietly(child._close_async())
            await self._disconnect_async()
        finally:
            if self._handle is not None:
                self._handle.stop()
                if self._start_provider_on_connect:
                    self._base_url = self._ws_url = None

    # --- more sessions -------------------------------------------------------------

    def _create_session_client(self) -> HookEnvClient[Any, Any, Any]:
        self._start_provider_if_needed()
        params = inspect.signature(type(self)).parameters
        any_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        offered: dict[str, Any] = {
            "base_url": self._base_url,
            "connect_timeout_s": self._connect_timeout,
            "message_timeout_s": self._message_timeout,
            "max_message_size_mb": self._max_message_size / (1024 * 1024),
            "websocket_ping_interval_s": self._websocket_ping_interval_s,
            "websocket_ping_timeout_s": self._websocket_ping_timeout_s,
            "mode": self._mode,
            "headers": self._headers,
        }
        return type(self)(**{k: v for k, v in offered.items() if any_kwargs or k in params})

    async def new_session(self) -> HookEnvClient[Any, Any, Any]:
        """Another session on the same server, closed with this client."""
        child = self._create_session_client()
        child._execution_mode = self._execution_mode
        await child._connect_async()
        self._child_clients.append(child)
        return child

    # --- factories -----------------------------------------------------------------

    @classmethod
    def from_docker_image(
        cls: type[ClientT], image: str, provider: Any = None, **kwargs: Any
    ) -> BootstrapResult[ClientT]:
        """Run ``image`` (with ``LocalDockerProvider`` unless given a provider) and connect:
        ``await`` the handle, or call ``.sync()`` on it."""
        return BootstrapResult(lambda: cls._bootstrap_container(image, provider, **kwargs))

    @classmethod
    def _bootstrap_container(cls: type[ClientT], image: str, provider: Any = None, **kwargs: Any) -> ClientT:
        """Start ``image`` and return an unconnected client that stops it on ``close``."""
        if provider is None:
            from ..containers import LocalDockerProvider

            provider = LocalDockerProvider()
        chosen = provider
        return _started(cls, chosen, lambda: chosen.start_container(image, **kwargs))

    @classmethod
    def from_env(
        cls: type[ClientT],
        repo_id: str,
        *,
        use_docker: bool = True,
        provider: Any = None,
        **provider_kwargs: Any,
    ) -> BootstrapResult[ClientT]:
        """Run Hugging Face Space ``repo_id`` locally and connect: its image from
        ``registry.hf.space`` (``use_docker``), or its source with ``uv run``."""
        start_keys = ("port", "env_vars", "workers")
        start_args = {k: provider_kwargs.pop(k) for k in start_keys if k in provider_kwargs}

        def build() -> ClientT:
            if use_docker:
                from ..containers import LocalDockerProvider

                docker: Any = provider or LocalDockerProvider()
                tag = provider_kwargs.pop("tag", "latest")
                image = f"registry.hf.space/{space_subdomain(repo_id)}:{tag}"
                options = {**start_args, **provider_kwargs}
                return _started(cls, docker, lambda: docker.start_container(image, **options))
            from ..containers import UVProvider

            if provider is not None and provider_kwargs:
                raise ValueError("provider_kwargs cannot be used with a provider instance")
            project = provider_kwargs.pop("project_path", f"git+https://huggingface.co/spaces/{repo_id}")
            runtime: Any = provider or UVProvider(project_path=project, **provider_kwargs)
            return _started(cls, runtime, lambda: runtime.start(**start_args))

        return BootstrapResult(build)

    # --- context managers and the sync wrapper --------------------------------------

    async def __aenter__(self) -> Self:
        self._claim_execution_mode("async")
        await self._connect_async()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._close_async()

    def __enter__(self) -> Self:
        self._run_sync(self._connect_async)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._run_sync(self._close_async)

    def sync(self) -> SyncHookEnvClient[ActT, ObsT, StateT]:
        """The blocking view of this client (same hooks, our blocking transport)."""
        from ._hooks_sync import SyncHookEnvClient

        if self._sync_client is None:
            self._sync_client = SyncHookEnvClient(self)
        return self._sync_client


def _started(cls: type[ClientT], provider: Any, start: Callable[[], Any]) -> ClientT:
    """Start ``provider`` with ``start()``, wait for it, and build an unconnected client
    that stops it on ``close``. On any failure the provider is stopped here."""
    handle = ProviderHandle(provider)
    handle.started = True
    try:
        out = start()
        if not isinstance(out, str):  # our Provider: a replica, healthy on return
            handle.adopt(out)
            out = out.base_url
        elif hasattr(provider, "start_container"):
            provider.wait_for_ready(out)
        else:
            provider.wait_for_ready()
        client = cls(base_url=out, provider=provider)
    except BaseException:
        handle.stop()
        raise
    client._handle = handle
    return client


async def _quietly(awaitable: Awaitable[Any]) -> None:
    with contextlib.suppress(Exception):
        await awaitable
