"""A blocking WebSocket connection on a plain socket: websockets' sans-I/O protocol for
the handshake, our ``Framer`` for the frames after it.

``send`` and ``recv`` run in the caller's thread, with the caller's timeout: no event
loop and no thread hop per message. Pings from the server are answered while reading,
and, between calls, by one process-wide keepalive thread that wakes once a second and
services only idle sockets (an agent may think for minutes between steps; servers,
upstream's included, drop a peer that leaves pings unanswered for ~40 s).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
import weakref
from collections.abc import Mapping

from websockets.client import ClientProtocol
from websockets.datastructures import Headers
from websockets.exceptions import InvalidHandshake, InvalidURI
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

_READ = 256 * 1024
#: How often the keepalive thread looks at idle sockets (pings come every ~20 s).
KEEPALIVE_POLL_S = 1.0


class _Keepalive:
    """One daemon thread for the process: answers pings on idle sockets."""

    def __init__(self) -> None:
        self._sockets: weakref.WeakSet[SyncWebSocket] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def register(self, ws: SyncWebSocket) -> None:
        with self._lock:
            self._sockets.add(ws)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="openenv-keepalive", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(KEEPALIVE_POLL_S)
            for ws in list(self._sockets):
                ws.service_idle()


_KEEPALIVE = _Keepalive()


class SyncWebSocket:
    """One client WebSocket; ``send``/``recv`` block the calling thread."""

    def __init__(
        self,
        url: str,
        *,
        subprotocols: list[str],
        headers: Mapping[str, str],
        max_size: int,
        connect_timeout_s: float,
    ) -> None:
        try:
            uri = parse_uri(url)
        except InvalidURI as exc:
            raise ConnectError(f"invalid URL {url!r}: {exc}") from None
        self._proto = ClientProtocol(
            uri, subprotocols=[Subprotocol(s) for s in subprotocols] or None, max_size=max_size
        )
        self._max_size = max_size
        self._framer = Framer(max_size)  # replaced at the 101; closed until then
        self._framer.close_sent = True
        deadline = time.monotonic() + connect_timeout_s
        try:
            sock = socket.create_connection((uri.host, uri.port), timeout=connect_timeout_s)
        except OSError as exc:
            raise ConnectError(f"cannot connect to {url}: {exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if uri.secure:
            import ssl  # only for wss://; keeps plain imports light

            try:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=uri.host)
            except (ssl.SSLError, OSError) as exc:
                sock.close()
                raise ConnectError(f"TLS handshake with {url} failed: {exc}") from None
        self._sock = sock
        request = self._proto.connect()
        if headers:
            request.headers.update(Headers(headers))
        self._proto.send_request(request)
        try:
            self._flush()
            response = self._handshake(deadline)
        except BaseException:
            sock.close()
            raise
        if self._proto.handshake_exc is not None:
            sock.close()
            raise handshake_refused(url, self._proto.handshake_exc)
        self.response = response
        self.subprotocol: str | None = self._proto.subprotocol
        self.server_limit = limit_from_header(response.headers.get(MAX_FRAME_HEADER))
        self._io = threading.Lock()  # held by every socket operation
        _KEEPALIVE.register(self)

    def _handshake(self, deadline: float) -> Response:
        head = bytearray()
        while True:
            data = self._recv_bytes(deadline, connecting=True)
            if not data:
                self._proto.receive_eof()
            else:
                head += data
                split = split_handshake(head)
                if split is not None:  # a 101: websockets checks it, the rest is frames
                    response_bytes, rest = split
                    self._proto.receive_data(response_bytes)
                    self._framer = Framer(self._max_size)
                    if rest:
                        self._framer.feed(rest)
                elif not_a_101(head):
                    self._proto.receive_data(bytes(head))  # a refusal: websockets says why
                    head.clear()
            if isinstance(self._proto.parser_exc, InvalidHandshake):
                raise ConnectError(f"handshake failed: {self._proto.parser_exc}")
            for event in self._proto.events_received():
                if isinstance(event, Response):
                    return event  # the caller checks handshake_exc
            if self._proto.handshake_exc is not None:
                raise ConnectError(f"handshake failed: {self._proto.handshake_exc}")
            if not data:
                raise ConnectError("the server closed the connection during the handshake")

    def _flush(self) -> None:
        for chunk in self._proto.data_to_send():
            if chunk:
                self._sock.sendall(chunk)

    def _recv_bytes(self, deadline: float, connecting: bool = False) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise (ConnectError("handshake timed out") if connecting else RequestTimeout("no reply in time"))
        self._sock.settimeout(remaining)
        try:
            return self._sock.recv(_READ)
        except TimeoutError:
            raise (
                ConnectError("handshake timed out") if connecting else RequestTimeout("no reply in time")
            ) from None
        except OSError as exc:
            raise ConnectionClosed(f"connection lost: {exc}") from None

    def _feed(self, framer: Framer, data: bytes) -> None:
        if data:
            framer.feed(data)
        else:
            framer.eof()
        if framer.pending:  # pongs, close replies
            chunks, framer.pending = framer.pending, []
            with contextlib.suppress(OSError):  # the peer is gone: the next read says how
                self._sock.sendall(b"".join(chunks))

    def service_idle(self) -> None:
        """Read what arrived while no call was running: answer pings, keep messages.

        Never blocks a caller: it skips the socket if a call holds it.
        """
        if not self._io.acquire(blocking=False):
            return
        try:
            framer = self._framer
            if not framer.open:
                return
            while select.select([self._sock], [], [], 0)[0]:
                self._sock.settimeout(0.5)
                data = self._sock.recv(_READ)
                self._feed(framer, data)
                if not data or not framer.open:
                    break
        except (OSError, ValueError):
            pass  # the connection is broken; the caller's next operation says how
        finally:
            self._io.release()

    def send(self, message: str | bytes) -> None:
        with self._io:
            self._send(message)

    def _send(self, message: str | bytes) -> None:
        # A closing connection is not writable even with messages still to read.
        framer = self._framer
        if not framer.open:
            self._raise_if_closed(unread_ok=False)
        try:
            self._sock.sendall(framer.text(message) if isinstance(message, str) else framer.binary(message))
        except OSError as exc:
            raise ConnectionClosed(f"connection lost: {exc}") from None

    def recv(self, timeout_s: float) -> str | bytes:
        """The next message, or ``RequestTimeout``/``ConnectionClosed``."""
        with self._io:
            return self._recv(timeout_s)

    def _recv(self, timeout_s: float) -> str | bytes:
        framer = self._framer
        messages = framer.messages
        if messages:
            return messages.popleft()
        deadline = time.monotonic() + timeout_s
        while True:
            self._raise_if_closed()
            self._feed(framer, self._recv_bytes(deadline))
            if messages:
                return messages.popleft()

    def _raise_if_closed(self, unread_ok: bool = True) -> None:
        framer = self._framer
        if framer.open:
            return
        if unread_ok and framer.messages:
            return
        if framer.error is not None:
            raise framer.error
        code, reason = framer.close_rcvd or (None, "")
        raise connection_closed(code, reason, self.server_limit)

    def close(self, code: int = 1000) -> None:
        """Send a close frame (if still open) and close the socket. Never raises."""
        with self._io:
            self._close(code)

    def _close(self, code: int) -> None:
        try:
            framer = self._framer
            if framer.open:
                self._sock.sendall(framer.close(code))
        except OSError:
            pass
        finally:
            self._sock.close()

