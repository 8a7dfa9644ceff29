"""A small HTTP/1.1 client for one backend: keep-alive connections in a pool, responses
parsed by httptools (what uvicorn parses requests with), bodies whole or as they come.

The capture proxy's hot path is one request to one host per agent call; a general
client (httpx: its transport, anyio, per-request models) costs more per call than the
rest of the proxy together. This one writes a prebuilt request head and the body in one
write and parses the reply in C. ``HttpError`` names what failed the way httpx's
exception classes do (``ConnectError``, ``ReadError``, ``ReadTimeout``,
``RemoteProtocolError``), so messages stay familiar.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httptools


class HttpError(Exception):
    """The request failed: ``kind`` is ``ConnectError``, ``ReadError``, ``ReadTimeout`` or
    ``RemoteProtocolError``; ``got_reply`` whether any of the reply had come."""

    def __init__(self, kind: str, message: str, *, got_reply: bool = False) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind, self.got_reply = kind, got_reply


class _Reply:
    """httptools callbacks: the status, headers, body pieces and the end of one reply."""

    def __init__(self) -> None:
        self.headers_done = False
        self.complete = False
        self.body: list[bytes] = []
        self.headers: dict[str, str] = {}
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.keep_alive = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.status = self.parser.get_status_code()
        # read here: llhttp forgets it once the message is complete
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


class Response:
    """A reply whose head has come; its body is read whole (``read``) or in pieces (``stream``)."""

    def __init__(self, pool: HttpPool, conn: _Conn, reply: _Reply) -> None:
        self._pool, self._conn, self._reply = pool, conn, reply
        self.status = reply.status
        self.headers = reply.headers

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self.stream()])

    async def stream(self) -> AsyncIterator[bytes]:
        """The body as it comes. Raises ``HttpError`` when the connection ends before it."""
        reply, conn = self._reply, self._conn
        try:
            while True:
                if reply.body:
                    pieces, reply.body = reply.body, []
                    for piece in pieces:
                        yield piece
                if reply.complete:
                    break
                await self._pool._feed(conn, reply, got_reply=True)
        except BaseException:
            self._conn = None  # type: ignore[assignment]
            conn.close()
            raise
        self._conn = None  # type: ignore[assignment]
        self._pool._release(conn, reply)

    def close(self) -> None:
        """Drop the connection if the body was not read to its end."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None  # type: ignore[assignment]


class HttpPool:
    """Keep-alive connections to the host of ``base_url``; requests by path under it."""

    def __init__(self, base_url: str, *, timeout_s: float = 600.0, max_idle: int = 256) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl.create_default_context() if parts.scheme == "https" else None
        self.prefix = parts.path.rstrip("/")
        default = self.port == (443 if self.ssl else 80)
        self.host_header = self.host if default else f"{self.host}:{self.port}"
        self.timeout_s = timeout_s
        self._idle: deque[_Conn] = deque()
        self._max_idle = max_idle

    def head(self, method: str, path: str, headers: dict[str, str]) -> bytes:
        """A request head without its content-length line (prebuilt once per route)."""
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"host: {self.host_header}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n").encode("latin-1")

    async def _connect(self) -> _Conn:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=self.ssl, limit=1 << 20), self.timeout_s
            )
        except TimeoutError as exc:
            raise HttpError("ConnectTimeout", f"no connection to {self.host}:{self.port}") from exc
        except OSError as exc:
            raise HttpError("ConnectError", str(exc) or type(exc).__name__) from exc
        return _Conn(reader, writer)

    async def request(self, head: bytes, body: bytes = b"") -> Response:
        """Send one request (``head`` from ``head()``), return once the reply's head came.

        A connection the server closed before any of the reply (a pooled one closed
        meanwhile, or a new one dropped) is retried once on a new one."""
        data = head + b"content-length: %d\r\n\r\n" % len(body) + body
        for attempt in (0, 1):
            conn = self._idle.pop() if self._idle and attempt == 0 else None
            if conn is None:
                conn = await self._connect()
            reply = _Reply()
            try:
                conn.writer.write(data)
                while not reply.headers_done:
                    await self._feed(conn, reply, got_reply=False)
            except HttpError as exc:
                conn.close()
                if attempt or exc.got_reply or exc.kind == "ReadTimeout":
                    raise
                # Closed before a byte of the reply: a stale keep-alive connection, or a new
                # one the backend dropped under a burst (seen at 512 sessions): once more on a
                # new one. Nothing of the reply was seen, so the client sees one answer.
                continue
            except BaseException:
                conn.close()
                raise
            return Response(self, conn, reply)
        raise AssertionError("unreachable")

    async def _feed(self, conn: _Conn, reply: _Reply, *, got_reply: bool) -> None:
        try:
            async with asyncio.timeout(self.timeout_s):
                data = await conn.reader.read(65536)
        except TimeoutError as exc:
            raise HttpError("ReadTimeout", f"no reply in {self.timeout_s:g} s", got_reply=got_reply) from exc
        except OSError as exc:
            raise HttpError("ReadError", str(exc) or type(exc).__name__, got_reply=got_reply) from exc
        if not data:
            te = reply.headers.get("transfer-encoding", "")
            if reply.headers_done and "content-length" not in reply.headers and "chunked" not in te:
                reply.complete = True  # a body that ends when the connection does
                return
            raise HttpError(
                "RemoteProtocolError" if got_reply else "ReadError",
                "the server closed the connection before the reply ended",
                got_reply=got_reply,
            )
        try:
            reply.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            raise HttpError("RemoteProtocolError", f"bad reply: {exc}", got_reply=True) from exc

    def _release(self, conn: _Conn, reply: _Reply) -> None:
        if reply.keep_alive and len(self._idle) < self._max_idle and not conn.reader.at_eof():
            self._idle.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        while self._idle:
            self._idle.pop().close()
