"""``ASGITransport``: drive a server app in-process, without sockets (tests, notebooks).

    app = create_app(MyEnv)
    with ASGITransport(app) as transport:
        with EnvClient("http://env", MODELS, transport=transport) as env:
            env.reset()

The app's lifespan (per-process resources, the reaper) runs while the transport is
open. Async clients run the app on their own event loop; sync clients on one event-loop
thread that the transport owns (the real WebSocket client has none). Frames cross as
ASGI messages: no size limit, no pings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from .._aio import LoopThread
from .._exceptions import ConnectError, ErrorCode, RequestTimeout, Unauthorized, connection_closed
from ._transport import ConnectParams

T = TypeVar("T")


class ASGITransport:
    """Connect clients to an ASGI app in this process."""

    def __init__(self, app: Any, *, lifespan: bool = True) -> None:
        """``lifespan=False`` when something else already runs the app's lifespan
        (a live server of the same app)."""
        self.app = app
        self.lifespan = lifespan
        self._loop = LoopThread("openenv-asgi")
        self._lifespan: _Lifespan | None = None

    # --- lifespan -----------------------------------------------------------------

    async def astart(self) -> None:
        if self._lifespan is None and self.lifespan:
            self._lifespan = _Lifespan(self.app)
            await self._lifespan.startup()

    async def aclose(self) -> None:
        lifespan, self._lifespan = self._lifespan, None
        if lifespan is not None:
            await lifespan.shutdown()

    async def __aenter__(self) -> ASGITransport:
        await self.astart()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> ASGITransport:
        self._run(self.astart())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the app (sync use) and the transport's loop thread."""
        if not self._loop.running:
            return
        self._run(self.aclose())
        self._loop.close()

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self._loop.run(coro, timeout)

    # --- connections --------------------------------------------------------------

    async def aconnect(self, params: ConnectParams) -> AsyncASGIConnection:
        await self.astart()
        conn = AsyncASGIConnection(self.app, params)
        await conn.open(params.connect_timeout_s)
        return conn

    def connect(self, params: ConnectParams) -> SyncASGIConnection:
        self._run(self.astart())
        conn = AsyncASGIConnection(self.app, params)
        self._run(conn.open(params.connect_timeout_s))
        return SyncASGIConnection(conn, self)


class AsyncASGIConnection:
    """One WebSocket conversation with the app, as two in-memory queues."""

    def __init__(self, app: Any, params: ConnectParams) -> None:
        self.app = app
        path = params.url.split("://", 1)[-1].partition("/")[2]
        self.scope = {
            "type": "websocket",
            "asgi": {"version": "3.0"},
            "scheme": "ws",
            "path": "/" + path,
            "raw_path": ("/" + path).encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in params.headers.items()],
            "subprotocols": list(params.subprotocols),
            "client": ("127.0.0.1", 0),
            "server": ("openenv-asgi", 80),
            "state": {},
        }
        self._to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed: dict[str, Any] | None = None
        self.subprotocol: str | None = None

    async def open(self, timeout_s: float) -> None:
        self._task = asyncio.create_task(self._serve())
        await self._to_app.put({"type": "websocket.connect"})
        try:
            async with asyncio.timeout(timeout_s):
                first = await self._from_app.get()
        except TimeoutError:
            raise ConnectError(f"the app did not accept within {timeout_s:g} s") from None
        if first["type"] != "websocket.accept":
            if first.get("reason") == ErrorCode.UNAUTHORIZED.value:
                raise Unauthorized("the app wants a bearer token: pass token=")
            raise ConnectError(f"the app refused the WebSocket ({first.get('code')})")
        self.subprotocol = first.get("subprotocol")

    async def _serve(self) -> None:
        try:
            await self.app(self.scope, self._to_app.get, self._from_app.put)
        finally:
            await self._from_app.put({"type": "websocket.close", "code": 1006, "reason": ""})

    async def send(self, frame: str | bytes) -> None:
        if self._closed is not None:
            raise connection_closed(self._closed.get("code"), self._closed.get("reason", ""))
        key = "text" if isinstance(frame, str) else "bytes"
        await self._to_app.put({"type": "websocket.receive", key: frame})

    async def recv(self, timeout_s: float) -> str | bytes:
        if self._closed is not None:
            raise connection_closed(self._closed.get("code"), self._closed.get("reason", ""))
        try:
            async with asyncio.timeout(timeout_s):
                msg = await self._from_app.get()
        except TimeoutError:
            raise RequestTimeout(f"no reply within {timeout_s:g} s") from None
        if msg["type"] == "websocket.send":
            return msg["text"] if msg.get("text") is not None else msg["bytes"]  # type: ignore[no-any-return]
        self._closed = msg
        raise connection_closed(msg.get("code", 1000), msg.get("reason") or "")

    async def close(self) -> None:
        if self._task is None or self._task.done():
            return
        await self._to_app.put({"type": "websocket.disconnect", "code": 1000})
        try:
            async with asyncio.timeout(5):
                await asyncio.shield(self._task)
        except (TimeoutError, Exception):
            self._task.cancel()


class SyncASGIConnection:
    """The same conversation driven from a blocking caller through the transport's loop."""

    def __init__(self, conn: AsyncASGIConnection, transport: ASGITransport) -> None:
        self._conn = conn
        self._transport = transport
        self.subprotocol = conn.subprotocol

    def send(self, frame: str | bytes) -> None:
        self._transport._run(self._conn.send(frame))

    def recv(self, timeout_s: float) -> str | bytes:
        return self._transport._run(self._conn.recv(timeout_s))

    def close(self) -> None:
        if self._transport._loop.running:
            self._transport._run(self._conn.close())


class _Lifespan:
    """Runs an app's ASGI lifespan: startup now, shutdown on request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._in: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._task = asyncio.create_task(self.app(scope, self._in.get, self._out.put))
        await self._in.put({"type": "lifespan.startup"})
        reply = await self._out.get()
        if reply["type"] != "lifespan.startup.complete":
            raise ConnectError(f"the app failed to start: {reply.get('message', reply['type'])}")

    async def shutdown(self) -> None:
        if self._task is None or self._task.done():
            return
        await self._in.put({"type": "lifespan.shutdown"})
        async with asyncio.timeout(10):
            await self._out.get()
