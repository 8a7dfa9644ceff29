"""An asyncio WebSocket connection: websockets' sans-I/O protocol on an asyncio Protocol.

No reader task, no frame assembler object, no per-message futures beyond the one a
waiting ``recv`` needs: bytes arrive in ``data_received``, become messages in a deque,
and wake the single waiter. Pings from the server are answered as they are read (the
event loop reads even while the caller thinks), so an idle client is never dropped.
Errors become ours here and nowhere else.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from websockets.client import ClientProtocol
from websockets.datastructures import Headers
from websockets.exceptions import InvalidHandshake, InvalidURI, PayloadTooBig
from websockets.frames import Opcode
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
from ._transport import ConnectParams
from ._wsync import _limit


async def connect(params: ConnectParams) -> AsyncWebSocket:
    try:
        uri = parse_uri(params.url)
    except InvalidURI as exc:
        raise ConnectError(f"invalid URL {params.url!r}: {exc}") from None
    proto = ClientProtocol(
        uri, subprotocols=[Subprotocol(s) for s in params.subprotocols] or None, max_size=params.max_size
    )
    loop = asyncio.get_running_loop()
    ws = AsyncWebSocket(proto, loop)
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
        raise ConnectError(f"handshake with {params.url} failed: {proto.handshake_exc}")
    ws.subprotocol = proto.subprotocol
    return ws


class AsyncWebSocket(asyncio.Protocol):
    """One client WebSocket on the running event loop."""

    def __init__(self, proto: ClientProtocol, loop: asyncio.AbstractEventLoop) -> None:
        self._proto = proto
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._messages: deque[str | bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._handshake: asyncio.Future[None] = loop.create_future()
        self._fragments: list[bytes] = []
        self._fragment_text = False
        self._lost = False
        self.subprotocol: str | None = None
        self.server_limit: int | None = None

    # --- asyncio.Protocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        proto = self._proto
        proto.receive_data(data)
        self._events()

    def eof_received(self) -> bool | None:
        self._proto.receive_eof()
        self._events()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if not self._handshake.done():
            self._handshake.set_exception(ConnectError(f"connection lost during the handshake: {exc}"))
        self._wake()

    # --- frames -------------------------------------------------------------------

    def _events(self) -> None:
        proto = self._proto
        got = False
        for received in proto.events_received():
            if isinstance(received, Response):
                self.server_limit = _limit(received.headers.get(MAX_FRAME_HEADER))
                if not self._handshake.done():
                    self._handshake.set_result(None)
                continue
            event: Any = received
            opcode = event.opcode
            if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
                if event.fin:
                    self._messages.append(event.data.decode() if opcode is Opcode.TEXT else bytes(event.data))
                    got = True
                else:
                    self._fragments, self._fragment_text = [bytes(event.data)], opcode is Opcode.TEXT
            elif opcode is Opcode.CONT:
                self._fragments.append(bytes(event.data))
                if event.fin:
                    whole = b"".join(self._fragments)
                    self._fragments = []
                    self._messages.append(whole.decode() if self._fragment_text else whole)
                    got = True
        if isinstance(proto.parser_exc, InvalidHandshake) and not self._handshake.done():
            self._handshake.set_result(None)  # connect() reads proto.handshake_exc
        self._flush()  # pongs, close replies
        if got or proto.close_rcvd is not None or proto.parser_exc is not None:
            self._wake()

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
            elif transport.can_write_eof():
                transport.write_eof()

    def _raise_if_closed(self) -> None:
        proto = self._proto
        if proto.close_rcvd is not None or self._lost or proto.state.name == "CLOSED":
            rcvd = proto.close_rcvd
            code, reason = (rcvd.code, rcvd.reason) if rcvd else (None, "")
            raise connection_closed(code, reason, self.server_limit)
        if proto.parser_exc is not None:
            raise _parser_error(proto.parser_exc)

    # --- the connection interface -------------------------------------------------

    async def send(self, frame: str | bytes) -> None:
        if self._lost or self._proto.state.name != "OPEN":
            self._raise_if_closed()
            raise ConnectionClosed("the connection is closing")
        if isinstance(frame, str):
            self._proto.send_text(frame.encode())
        else:
            self._proto.send_binary(frame)
        self._flush()

    async def recv(self, timeout_s: float) -> str | bytes:
        messages = self._messages
        if messages:
            return messages.popleft()
        loop = self._loop
        deadline = loop.time() + timeout_s
        while True:
            self._raise_if_closed()
            waiter = self._waiter = loop.create_future()
            handle = loop.call_at(deadline, _expire, waiter)
            try:
                await waiter
            finally:
                handle.cancel()
                self._waiter = None
            if messages:
                return messages.popleft()
            if loop.time() >= deadline:
                raise RequestTimeout(f"no reply within {timeout_s:g} s")

    async def close(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        try:
            if self._proto.state.name == "OPEN":
                self._proto.send_close(1000)
                self._flush()
        finally:
            transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()


def _parser_error(exc: Exception) -> ConnectionClosed:
    if isinstance(exc, PayloadTooBig):
        return ConnectionClosed(
            f"a frame from the server was over this client's limit ({exc}); raise the client's "
            "max_frame_bytes"
        )
    return ConnectionClosed(f"protocol error: {exc}")


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
