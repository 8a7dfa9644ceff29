"""``/mcp`` on every env server: the SDK's streamable HTTP, plus upstream's plain JSON-RPC.

``mcp_endpoint`` plugs it into ``openenv.server`` (the ``openenv.endpoints`` entry point
in pyproject.toml; the server imports nothing of this package).

The SDK costs about a second to import, so nothing of it loads until the first
request to ``/mcp`` (imported on a worker thread, off the event loop). Its session
manager then runs in a task of its own until the app shuts down.

Routing: a ``POST`` with no ``Mcp-Session-Id``, no ``MCP-Protocol-Version`` and an
``Accept`` without ``text/event-stream`` is upstream OpenEnv's dialect (``_compat``);
everything else is the standard protocol, both the 2026-07-28 sessionless requests
and ``initialize`` sessions.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from .._env import EnvClass
from ..server._jsonrpc import PARSE_ERROR, read_body, rpc_error
from ..server._openapi import ProtocolRoute
from ..server._sessions import Session, SessionManager
from ..server._settings import ServerSettings

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from ._compat import CompatRpc


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return None


def is_upstream_request(scope: Scope) -> bool:
    """Whether an HTTP request speaks upstream OpenEnv's JSON-RPC rather than MCP."""
    if scope.get("method") != "POST":
        return False
    if _header(scope, b"mcp-session-id") is not None or _header(scope, b"mcp-protocol-version") is not None:
        return False
    return b"text/event-stream" not in (_header(scope, b"accept") or b"")


class _Loaded:
    def __init__(self, sdk: StreamableHTTPSessionManager, compat: CompatRpc) -> None:
        self.sdk = sdk
        self.compat = compat


def mcp_endpoint(
    env_class: EnvClass, manager: SessionManager, settings: ServerSettings
) -> McpEndpoint | None:
    """The ``openenv.endpoints`` entry point: ``/mcp`` for one env app, None without the SDK.

    The bridge costs nothing until ``/mcp`` is first requested.
    """
    if importlib.util.find_spec("mcp") is None or not _sdk_fits():
        return None
    return McpEndpoint(env_class, manager, settings)


def _sdk_fits() -> bool:
    """The installed SDK is one the bridge is written for (the mcp extra's 2.3 floor): an
    older one (verifiers 0.4 pins mcp 2.0.0) means no /mcp, not a 500 on every request."""
    import importlib.metadata

    try:
        major, minor = (int(part) for part in importlib.metadata.version("mcp").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return True
    return (major, minor) >= (2, 3)


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``: a ``ProtocolEndpoint`` of ``openenv.server``."""

    def __init__(self, env_class: EnvClass, manager: SessionManager, settings: ServerSettings) -> None:
        self.env_class = env_class
        self.manager = manager
        self.settings = settings
        self._loaded: _Loaded | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def routes(self) -> list[BaseRoute]:
        # GET (the event stream) and DELETE (the end) of a streamable-HTTP session name it
        session = ("mcp-session-id",)
        methods = ["GET", "POST", "DELETE"]
        headers = {"GET": session, "DELETE": session}
        return [ProtocolRoute("/mcp", self, methods=methods, headers=headers, name="mcp")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loaded = await self._load()
        if is_upstream_request(scope):
            await self._compat(loaded.compat, receive, send)
        else:
            await loaded.sdk.handle_request(scope, receive, send)

    async def ws_message(self, request: Any, session: Session | None) -> dict[str, Any]:
        """Answer a ``{"type": "mcp"}`` WebSocket message for that socket's session."""
        loaded = await self._load()
        return await loaded.compat.handle(request, session)

    @staticmethod
    async def _compat(compat: CompatRpc, receive: Receive, send: Send) -> None:
        body = await read_body(receive)
        try:
            reply = await compat.handle(orjson.loads(body))
        except orjson.JSONDecodeError:
            reply = rpc_error(None, PARSE_ERROR, "Parse error")
        payload = orjson.dumps(reply)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _load(self) -> _Loaded:
        if self._loaded is not None:
            return self._loaded
        async with self._lock:
            if self._loaded is None:
                if self._closed:
                    raise RuntimeError("the MCP endpoint has shut down")
                await asyncio.to_thread(importlib.import_module, "openenv.mcp._served")
                from ._served import build

                sdk, compat = build(self.env_class, self.manager, self.settings)
                started = asyncio.Event()
                self._task = asyncio.create_task(self._run(sdk, started), name="openenv-mcp")
                waiter = asyncio.ensure_future(started.wait())
                await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if not started.is_set():
                    waiter.cancel()
                    await self._task  # raises why the SDK's session manager did not start
                self._loaded = _Loaded(sdk, compat)
        return self._loaded

    async def _run(self, sdk: StreamableHTTPSessionManager, started: asyncio.Event) -> None:
        async with sdk.run():
            started.set()
            await self._stop.wait()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            self._closed = True
            self._stop.set()
            if self._task is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._task, 10.0)
