"""A session's own endpoint: the capture proxy's model routes on a unix socket, bound to one session.

An agent in a sandbox gets a socket, not the proxy: every request on it is answered by
the same proxy app (same event loop, no extra hop) as a call of that one session,
whatever key the agent sends (the key headers are replaced by the session's id), and
only the model routes answer (``POST`` of a dialect route, ``GET /v1/models``): the
session routes, ``/health`` and every other session are out of its reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import orjson

from ._detection import detect
from ._errors import UnknownDialect

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
_KEY_HEADERS = (b"authorization", b"x-api-key", b"x-goog-api-key")


@dataclass
class EndpointCounts:
    """What an endpoint saw: model calls forwarded, requests refused (by route)."""

    calls: int = 0
    refused: list[str] = field(default_factory=list)


def bound_app(app: ASGIApp, session_id: str, counts: EndpointCounts) -> ASGIApp:
    """``app`` as seen through one session's endpoint (see the module doc)."""
    key = f"Bearer {session_id}".encode()

    async def endpoint(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # the proxy's own lifespan runs on its own server
            message = await receive()
            await send({"type": f"{message['type']}.complete"})
            return
        if scope["type"] != "http":
            return
        path, method = scope.get("path", ""), scope.get("method", "")
        allowed = method == "GET" and path.rstrip("/") == "/v1/models"
        if method == "POST":
            try:
                detect(path)
                allowed = True
            except UnknownDialect:
                allowed = False
        if not allowed:
            counts.refused.append(f"{method} {path}")
            body = orjson.dumps(
                {"error": {"message": f"{method} {path}: not a model route", "type": "not_found"}}
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 404,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        if method == "POST":
            counts.calls += 1
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() not in _KEY_HEADERS]
        query = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode()) if k != "key"]
        scope = {
            **scope,
            "headers": [*headers, (b"authorization", key)],
            "query_string": urlencode(query).encode(),
        }
        await app(scope, receive, send)

    return endpoint


class SessionEndpoint:
    """One session's endpoint served on ``path`` (a unix socket, mode 0666) until ``close``;
    ``counts`` says what it saw. Made by ``CaptureServer.open_endpoint``; runs on the
    proxy's event loop."""

    def __init__(self, app: ASGIApp, path: str, session_id: str, loop: asyncio.AbstractEventLoop) -> None:
        import uvicorn

        from .._uvicorn_server import PromptServer

        self.path, self.session_id, self.counts = path, session_id, EndpointCounts()
        config = uvicorn.Config(
            bound_app(app, session_id, self.counts), uds=path, log_level="warning", lifespan="off"
        )
        self._server, self._loop = PromptServer(config), loop
        self._task: asyncio.Future[None] | None = None

    @classmethod
    def open(
        cls, app: ASGIApp, path: str, session_id: str, loop: asyncio.AbstractEventLoop
    ) -> SessionEndpoint:
        """Serve it on ``loop`` (another thread's); returns once it answers (``OSError`` if not)."""
        if os.path.exists(path):
            os.unlink(path)
        endpoint = cls(app, path, session_id, loop)
        server = endpoint._server

        async def start() -> None:
            endpoint._task = task = asyncio.ensure_future(server.serve())
            for _ in range(500):  # 5 s at most
                if server.started or task.done():
                    break
                await asyncio.sleep(0.01)

        asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=30)
        if not server.started:
            raise OSError(f"the session endpoint did not start on {path}")
        os.chmod(path, 0o666)
        return endpoint

    def close(self) -> None:
        """Stop answering (calls in flight finish first, 5 s at most) and remove the socket."""
        server, task = self._server, self._task

        async def stop() -> None:
            server.stop_soon()
            if task is not None:
                await asyncio.wait([task], timeout=5)

        if task is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError, TimeoutError):
                asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._task = None
        if os.path.exists(self.path):
            os.unlink(self.path)

    def __enter__(self) -> SessionEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
