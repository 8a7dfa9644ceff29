"""A blocking WebSocket connection: websockets' sans-I/O protocol on a plain socket.

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
from collections import deque
from collections.abc import Mapping

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
        self._messages: deque[str | bytes] = deque()
        self._fragments: list[bytes] = []
        self._fragment_text = False
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
            raise ConnectError(f"handshake with {url} failed: {self._proto.handshake_exc}")
        self.response = response
        self.subprotocol: str | None = self._proto.subprotocol
        self.server_limit = _limit(response.headers.get(MAX_FRAME_HEADER))
        self._io = threading.Lock()  # held by every socket operation
        _KEEPALIVE.register(self)

    def _handshake(self, deadline: float) -> Response:
        while True:
            self._read(deadline, connecting=True)
            response: Response | None = None
            for event in self._proto.events_received():
                if isinstance(event, Response):
                    response = event
                else:
                    # Frames read together with the response are kept: a server may send
                    # an error right after accepting, then close (upstream at capacity).
                    self._on_frame(event)
            if self._proto.handshake_exc is not None:
                raise ConnectError(f"handshake failed: {self._proto.handshake_exc}")
            if response is not None:
                return response

    def _flush(self) -> None:
        for chunk in self._proto.data_to_send():
            if chunk:
                self._sock.sendall(chunk)
            else:  # the protocol asks us to half-close after a close frame
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_WR)

    def _read(self, deadline: float, connecting: bool = False) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise (ConnectError("handshake timed out") if connecting else RequestTimeout("no reply in time"))
        self._sock.settimeout(remaining)
        try:
            data = self._sock.recv(_READ)
        except TimeoutError:
            raise (
                ConnectError("handshake timed out") if connecting else RequestTimeout("no reply in time")
            ) from None
        except OSError as exc:
            raise ConnectionClosed(f"connection lost: {exc}") from None
        if data:
            self._proto.receive_data(data)
        else:
            self._proto.receive_eof()
        if isinstance(self._proto.parser_exc, InvalidHandshake):
            raise ConnectError(f"handshake failed: {self._proto.parser_exc}")

    def _on_frame(self, frame: object) -> None:
        opcode = frame.opcode  # type: ignore[attr-defined]
        data: bytes = frame.data  # type: ignore[attr-defined]
        if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:  # type: ignore[attr-defined]
                self._messages.append(data.decode() if opcode is Opcode.TEXT else bytes(data))
            else:
                self._fragments, self._fragment_text = [bytes(data)], opcode is Opcode.TEXT
        elif opcode is Opcode.CONT:
            self._fragments.append(bytes(data))
            if frame.fin:  # type: ignore[attr-defined]
                whole = b"".join(self._fragments)
                self._fragments = []
                self._messages.append(whole.decode() if self._fragment_text else whole)

    def service_idle(self) -> None:
        """Read what arrived while no call was running: answer pings, keep messages.

        Never blocks a caller: it skips the socket if a call holds it.
        """
        if not self._io.acquire(blocking=False):
            return
        try:
            if self._proto.state.name != "OPEN":
                return
            while select.select([self._sock], [], [], 0)[0]:
                self._sock.settimeout(0.5)
                data = self._sock.recv(_READ)
                if data:
                    self._proto.receive_data(data)
                else:
                    self._proto.receive_eof()
                for event in self._proto.events_received():
                    self._on_frame(event)
                self._flush()
                if not data:
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
        self._raise_if_closed(unread_ok=False)
        if isinstance(message, str):
            self._proto.send_text(message.encode())
        else:
            self._proto.send_binary(message)
        try:
            self._flush()
        except OSError as exc:
            raise ConnectionClosed(f"connection lost: {exc}") from None

    def recv(self, timeout_s: float) -> str | bytes:
        """The next message, or ``RequestTimeout``/``ConnectionClosed``."""
        with self._io:
            return self._recv(timeout_s)

    def _recv(self, timeout_s: float) -> str | bytes:
        if self._messages:
            return self._messages.popleft()
        deadline = time.monotonic() + timeout_s
        while True:
            self._raise_if_closed()
            self._read(deadline)
            for event in self._proto.events_received():
                self._on_frame(event)
            with contextlib.suppress(OSError):  # the peer is gone: the close frame or next read says how
                self._flush()  # pongs and close replies
            if self._messages:
                return self._messages.popleft()

    def _raise_if_closed(self, unread_ok: bool = True) -> None:
        proto = self._proto
        if proto.close_rcvd is not None or proto.state.name == "CLOSED":
            if unread_ok and self._messages:
                return
            rcvd = proto.close_rcvd
            code, reason = (rcvd.code, rcvd.reason) if rcvd else (None, "")
            raise connection_closed(code, reason, self.server_limit)
        if proto.parser_exc is not None:
            if isinstance(proto.parser_exc, PayloadTooBig):
                raise ConnectionClosed(
                    f"a frame from the server was over this client's limit ({proto.parser_exc}); "
                    "raise the client's max_frame_bytes"
                )
            raise ConnectionClosed(f"protocol error: {proto.parser_exc}")

    def close(self, code: int = 1000) -> None:
        """Send a close frame (if still open) and close the socket. Never raises."""
        with self._io:
            self._close(code)

    def _close(self, code: int) -> None:
        try:
            if self._proto.state.name == "OPEN":
                self._proto.send_close(code)
                self._flush()
        except OSError:
            pass
        finally:
            self._sock.close()


def _limit(value: str | None) -> int | None:
    """The server's frame limit from its handshake header, if it sent a valid one."""
    return int(value) if value is not None and value.isdigit() else None
