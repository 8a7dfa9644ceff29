"""An asyncio WebSocket connection on an asyncio Protocol: websockets' sans-I/O
protocol for the handshake, our ``Framer`` for the frames after it.

No reader task, no frame assembler object, no per-message futures beyond the one a
waiting ``recv`` needs and no timer per call: bytes arrive in ``data_received``, become
messages in a deque, and wake the single waiter. Pings from the server are answered as they are read (the
event loop reads even while the caller thinks), so an idle client is never dropped.
Errors become ours here and nowhere else.
"""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.client import ClientProtocol
from websockets.datastructures import Headers
from websockets.exceptions import InvalidURI
from websockets.http11 import Response
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from .._exceptions import (
    MAX_FRAME_HEADER,
    ConnectError,
    ConnectionClosed,
    RequestTimeout,
    connection_closed,
)
from ._frames import Framer, handshake_refused, limit_from_header, not_a_101, split_handshake
from ._transport import ConnectParams


async def connect(params: ConnectParams) -> AsyncWebSocket:
    try:
        uri = parse_uri(params.url)
    except InvalidURI as exc:
        raise ConnectError(f"invalid URL {params.url!r}: {exc}") from None
    proto = ClientProtocol(
        uri, subprotocols=[Subprotocol(s) for s in params.subprotocols] or None, max_size=params.max_size
    )
    loop = asyncio.get_running_loop()
    ws = AsyncWebSocket(proto, loop, params.max_size)
    ssl: Any = None
    if uri.secure:
        import ssl as ssl_module  # only for wss://

        ssl = ssl_module.create_default_context()
    try:
        async with asyncio.timeout(params.connect_timeout_s):
            await loop.create_connection(
                lambda: ws, uri.host, uri.port, ssl=ssl, server_hostname=uri.host if ssl else None
            )
            request = proto.connect()
            if params.headers:
                request.headers.update(Headers(dict(params.headers)))
            proto.send_request(request)
            ws._flush()
            await ws._handshake
    except TimeoutError:
        ws.abort()
        raise ConnectError(
            f"cannot connect to {params.url}: no handshake within {params.connect_timeout_s:g} s"
        ) from None
    except OSError as exc:
        ws.abort()
        raise ConnectError(f"cannot connect to {params.url}: {exc}") from None
    if proto.handshake_exc is not None:
        ws.abort()
        raise handshake_refused(params.url, proto.handshake_exc)
    ws.subprotocol = proto.subprotocol
    return ws


class AsyncWebSocket(asyncio.Protocol):
    """One client WebSocket on the running event loop."""

    def __init__(self, proto: ClientProtocol, loop: asyncio.AbstractEventLoop, max_size: int | None) -> None:
        self._proto = proto
        self._max_size = max_size
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._framer: Framer | None = None  # from the 101 on
        self._head = bytearray()  # the handshake response, until it is complete
        self._waiter: asyncio.Future[None] | None = None
        self._handshake: asyncio.Future[None] = loop.create_future()
        # One timer for the connection, re-armed lazily: a recv moves the deadline
        # without scheduling or cancelling a timer of its own.
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._lost = False
        self.subprotocol: str | None = None
        self.server_limit: int | None = None

    # --- asyncio.Protocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        framer = self._framer
        if framer is None:
            self._handshake_data(data)
            return
        framer.feed(data)
        if framer.pending:
            self._write_pending(framer)
        if framer.messages or not framer.open:
            self._wake()

    def eof_received(self) -> bool | None:
        if self._framer is not None:
            self._framer.eof()
        else:
            self._proto.receive_eof()
            self._events()
        self._wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if not self._handshake.done():
            self._handshake.set_exception(ConnectError(f"connection lost during the handshake: {exc}"))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._wake()

    # --- the handshake (websockets' protocol), then frames (ours) -----------------

    def _handshake_data(self, data: bytes) -> None:
        head = self._head
        head += data
        split = split_handshake(head)
        if split is None:
            if not_a_101(head):
                # not a 101 (websockets reads the whole refusal and says why), or too long
                self._proto.receive_data(bytes(head))
                head.clear()
                self._events()
            return
        response, rest = split
        head.clear()
        self._proto.receive_data(response)
        self._events()
        if self._proto.handshake_exc is None:
            self._framer = Framer(self._max_size)
            if rest:
                self.data_received(rest)

    def _events(self) -> None:
        proto = self._proto
        for received in proto.events_received():
            if isinstance(received, Response):
                self.server_limit = limit_from_header(received.headers.get(MAX_FRAME_HEADER))
                if not self._handshake.done():
                    self._handshake.set_result(None)
        if (proto.parser_exc is not None or proto.handshake_exc is not None) and not self._handshake.done():
            self._handshake.set_result(None)  # connect() reads proto.handshake_exc
        self._flush()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _flush(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        for chunk in self._proto.data_to_send():
            if chunk:
                transport.write(chunk)

    def _write_pending(self, framer: Framer) -> None:
        chunks, framer.pending = framer.pending, []
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.write(b"".join(chunks))

    def _raise_if_closed(self) -> None:
        framer = self._framer
        if framer is None:
            raise ConnectionClosed("the connection is not open")
        if framer.error is not None:
            raise framer.error
        if framer.close_rcvd is not None or self._lost or framer.close_sent:
            code, reason = framer.close_rcvd or (None, "")
            raise connection_closed(code, reason, self.server_limit)

    def _on_timer(self) -> None:
        self._timer = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._loop.time() >= self._deadline:
            waiter.set_result(None)
        else:
            self._timer = self._loop.call_at(self._deadline, self._on_timer)

    # --- the connection interface -------------------------------------------------

    async def send(self, frame: str | bytes) -> None:
        framer = self._framer
        transport = self._transport
        if framer is None or not framer.open or self._lost or transport is None:
            self._raise_if_closed()
            raise ConnectionClosed("the connection is closing")
        transport.write(framer.text(frame) if isinstance(frame, str) else framer.binary(frame))

    async def recv(self, timeout_s: float) -> str | bytes:
        framer = self._framer
        if framer is not None and framer.messages:
            return framer.messages.popleft()
        loop = self._loop
        deadline = self._deadline = loop.time() + timeout_s
        while True:
            self._raise_if_closed()
            assert framer is not None
            timer = self._timer
            if timer is None or timer.when() > deadline:
                if timer is not None:
                    timer.cancel()
                self._timer = loop.call_at(deadline, self._on_timer)
            waiter = self._waiter = loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
            if framer.messages:
                return framer.messages.popleft()
            if loop.time() >= deadline:
                raise RequestTimeout(f"no reply within {timeout_s:g} s")

    async def close(self) -> None:
        transport = self._transport
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if transport is None or transport.is_closing():
            return
        try:
            if self._framer is not None and self._framer.open:
                transport.write(self._framer.close(1000))
        finally:
            transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()
