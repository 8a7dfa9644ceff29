"""Admission control: who may talk to the server, and how much they may send or hold.

``Admission`` is the app's outermost ASGI layer. Its checks run once per HTTP request
and once per WebSocket handshake (never per frame):

* **origin** (``_origin.OriginPolicy``): a browser page of another origin, or a ``Host``
  the server does not answer to (DNS rebinding), gets ``403 FORBIDDEN`` (the same 403 on
  a WebSocket handshake), whatever the token;
* **bearer token** (``ServerSettings.auth_token``, ``openenv serve --auth-token``,
  ``OPENENV_AUTH_TOKEN``): every path but ``/health`` and the playground's static files
  (``OPEN_PATHS``; the page asks for the token) needs ``Authorization: Bearer <token>``;
  HTTP gets ``401 UNAUTHORIZED`` with the error body, a WebSocket handshake the same 401
  response (or a ``1008`` close where the server cannot send one);
* **body limit** (``max_frame_bytes``, the WebSocket frame limit): a ``Content-Length``
  over it is answered ``413 FRAME_TOO_LARGE`` before any byte of the body is read; a
  body without one (chunked) is read here, counted, and refused the same way as soon
  as it passes the limit;
* **the caller's address** for the per-client session quota: ``peer`` holds it while
  the request or connection runs, and ``SessionManager.open`` reads it. It is the
  socket's peer: ``X-Forwarded-For`` moves it only from the proxies named in
  ``forwarded_allow_ips`` (uvicorn's ``proxy_headers``, off by default).
"""

from __future__ import annotations

import contextvars
import hmac
from typing import Any

import orjson

from .._exceptions import Forbidden, FrameTooLarge, Unauthorized, WireError
from ._origin import OriginPolicy

Scope = dict[str, Any]
Message = dict[str, Any]

#: The peer address (host) of the request or WebSocket connection being served.
peer: contextvars.ContextVar[str | None] = contextvars.ContextVar("openenv_peer", default=None)
#: The server's own ``(host, port)`` that request or connection reached (an env that calls
#: its own server, as ``openenv.harbor``'s ``run_rollout`` tool does, dials it).
served_at: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar(
    "openenv_served_at", default=None
)

#: Paths served without a token: liveness probes (Docker's HEALTHCHECK) carry none, and
#: a browser cannot send one when it opens the playground: its page and assets (the same
#: files on every server) ask for the token and send it on every call they make.
OPEN_PATHS = frozenset({"/health", "/web", "/web/", "/web/index.html", "/web/playground.js",
                        "/web/playground.css"})


def _error_response(err: WireError) -> tuple[Message, Message]:
    body = orjson.dumps({"detail": err.message, "error": err.to_wire()})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if isinstance(err, Unauthorized):
        headers.append((b"www-authenticate", b'Bearer realm="openenv"'))
    start = {"type": "http.response.start", "status": err.http_status, "headers": headers}
    return start, {"type": "http.response.body", "body": body}


def unauthorized() -> Unauthorized:
    return Unauthorized(
        "this server wants a bearer token: send 'Authorization: Bearer <token>' "
        "(clients: token= or OPENENV_AUTH_TOKEN)"
    )


def body_too_large(limit: int) -> FrameTooLarge:
    return FrameTooLarge(
        f"the request body is over the server's limit of {limit} bytes "
        "(OPENENV_MAX_FRAME_BYTES, the WebSocket frame limit)",
        limit=limit,
    )


class Admission:
    """ASGI middleware: the origin, the token, the body limit and the caller's address."""

    def __init__(
        self, app: Any, *, auth_token: str, max_body_bytes: int, origins: OriginPolicy | None = None
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self._expected = f"Bearer {auth_token}".encode() if auth_token else None
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.app(scope, receive, send)
            return
        expected = self._expected
        length: bytes | None = None
        host: bytes | None = None
        origin: bytes | None = None
        fetch_site: bytes | None = None
        fetch_mode: bytes | None = None
        authorized = expected is None or scope["path"] in OPEN_PATHS
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = value
            elif name == b"host":
                host = value
            elif name == b"origin":
                origin = value
            elif name == b"sec-fetch-site":
                fetch_site = value
            elif name == b"sec-fetch-mode":
                fetch_mode = value
            elif name == b"authorization" and not authorized:
                authorized = hmac.compare_digest(value, expected)
        origins = self.origins
        refused = origins.refusal(host, origin, fetch_site, fetch_mode) if origins is not None else None
        client = scope.get("client")
        token = peer.set(client[0] if client else None)
        server = scope.get("server")  # None on a unix socket
        here = served_at.set((str(server[0]), int(server[1])) if server and server[1] is not None else None)
        try:
            if refused is not None:
                await self._refuse(scope, receive, send, Forbidden(refused))
                return
            if not authorized:
                await self._refuse(scope, receive, send, unauthorized())
                return
            fits = length is not None and length.isdigit() and int(length) <= self.max_body_bytes
            if kind != "http" or fits:
                await self.app(scope, receive, send)
            elif length is not None:
                await self._refuse(scope, receive, send, body_too_large(self.max_body_bytes))
            else:
                await self._counted(scope, receive, send)
        finally:
            served_at.reset(here)
            peer.reset(token)

    async def _counted(self, scope: Scope, receive: Any, send: Any) -> None:
        """A body of unknown length (chunked): read it here, counting, up to the limit;
        the app then gets it whole. Only such bodies take this path."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message: Message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_body_bytes:
                return await self._refuse(scope, receive, send, body_too_large(self.max_body_bytes))
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replay: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replaying_receive() -> Message:
            return replay.pop() if replay else await receive()

        await self.app(scope, replaying_receive, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Any, send: Any, err: WireError) -> None:
        start, body = _error_response(err)
        if scope["type"] == "http":
            await send(start)
            await send(body)
            return
        await receive()  # websocket.connect
        if "websocket.http.response" in scope.get("extensions", {}):
            await send({**start, "type": "websocket.http.response.start"})
            await send({**body, "type": "websocket.http.response.body"})
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": err.code.value})
