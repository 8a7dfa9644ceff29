"""RFC 6455 framing for an open client connection, both clients' hot path.

websockets' sans-I/O protocol does the opening handshake (request, ``Sec-WebSocket-Accept``
check, subprotocol); from the ``101`` on, a ``Framer`` does the framing: about 2 us a
message each way where the general-purpose parser costs 5-8 us. Frames are read by
the ``FrameReader`` the server's direct protocol also uses (``openenv/_wsframes.py``),
configured for a client: unmasked frames in, fragmented or not; the frame-size limit;
bad UTF-8 and protocol errors failing the connection with the codes RFC 6455 gives.
The ``Framer`` adds a client's side: masked frames out, pings answered, close frames
answered and reported. No extensions are negotiated (the clients offer none), so
reserved bits are an error.

The ``Framer`` does no I/O: ``feed`` takes bytes read, ``messages`` holds what arrived,
``pending`` holds control frames to write (pongs, close replies), and ``text``,
``binary``, ``close`` return frames to write.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from typing import Any

import orjson

from .._exceptions import ConnectError, ConnectionClosed, Forbidden, OpenEnvError, Unauthorized
from .._wsframes import BINARY, CLOSE, PING, PONG, TEXT, FrameReader, apply_mask, frame_header

_HEADER_END = b"\r\n\r\n"
_SWITCHING = b"HTTP/1.1 101 "
#: Bytes of response header a server may send before the handshake counts as broken.
MAX_HANDSHAKE = 64 * 1024


def split_handshake(data: bytes | bytearray) -> tuple[bytes, bytes] | None:
    """``(response head, bytes after it)`` once a ``101`` head is complete; None while
    incomplete or when the response is not a ``101`` (websockets reads those whole)."""
    end = data.find(_HEADER_END)
    if end < 0 or not data.startswith(_SWITCHING):
        return None
    end += len(_HEADER_END)
    return bytes(data[:end]), bytes(data[end:])


def not_a_101(head: bytes | bytearray) -> bool:
    """True once the response head so far cannot become a ``101`` (or is too long): it
    is a refusal, for websockets to read whole and say why."""
    return len(head) > MAX_HANDSHAKE or not _SWITCHING.startswith(bytes(head[: len(_SWITCHING)]))


def handshake_refused(url: str, exc: BaseException) -> OpenEnvError:
    """The typed error of a refused handshake: ``Unauthorized`` for a ``401`` (a missing
    or wrong ``token=``; the server's own message when it sent our error body),
    ``Forbidden`` for our ``403`` (a ``Host`` or ``Origin`` the server refuses), else
    ``ConnectError``."""
    response: Any = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status not in (401, 403):
        return ConnectError(f"handshake with {url} failed: {exc}")
    try:
        message = str(orjson.loads(response.body)["error"]["message"])
    except Exception:  # not our error body: a proxy's page, say
        if status == 403:
            return ConnectError(f"handshake with {url} failed: {exc}")
        message = "the server wants a bearer token: pass token= (or set OPENENV_AUTH_TOKEN)"
    return (Unauthorized if status == 401 else Forbidden)(f"{url}: {message}")


def limit_from_header(value: str | None) -> int | None:
    """The server's frame limit from its handshake header, if it sent a valid one."""
    return int(value) if value is not None and value.isdigit() else None


def _frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    return frame_header(opcode, len(payload), 0x80) + mask + apply_mask(payload, mask)


class Framer(FrameReader):
    """The framing state of one open client connection."""

    __slots__ = ("close_rcvd", "close_sent", "error", "messages", "pending")

    def __init__(self, max_size: int | None) -> None:
        super().__init__(masked=False, max_size=max_size)
        self.messages: deque[str | bytes] = deque()
        self.pending: list[bytes] = []
        #: ``(code, reason)`` of the server's close frame (code None: it sent none)
        self.close_rcvd: tuple[int | None, str] | None = None
        self.close_sent = False
        #: why the connection failed on our side (a protocol error, a frame too large)
        self.error: ConnectionClosed | None = None

    @property
    def open(self) -> bool:
        return self.close_rcvd is None and self.error is None and not self.close_sent

    # --- out ----------------------------------------------------------------------

    def text(self, message: str) -> bytes:
        return _frame(TEXT, message.encode())

    def binary(self, message: bytes) -> bytes:
        return _frame(BINARY, message)

    def close(self, code: int = 1000, reason: str = "") -> bytes:
        """Our close frame (empty once one was sent)."""
        if self.close_sent:
            return b""
        self.close_sent = True
        return _frame(CLOSE, struct.pack("!H", code) + reason.encode()[:123])

    # --- in: FrameReader's hooks --------------------------------------------------

    def eof(self) -> None:
        """The server closed the TCP stream."""
        self.stopped = True
        if self.close_rcvd is None and self.error is None:
            self.close_rcvd = (None, "")

    def message(self, data: str | bytes) -> None:
        self.messages.append(data)

    def control(self, opcode: int, payload: bytes, frame: bytes) -> bool:
        if opcode == PING:
            if not self.close_sent:
                self.pending.append(_frame(PONG, payload))
            return True
        if opcode == PONG:
            return True
        return self._close_in(payload)

    def refuse(self, code: int, why: str, rest: bytes | None) -> None:
        if code == 1009:
            self._fail(
                code,
                f"a frame from the server was over this client's limit (over {self.max_size} bytes); "
                "raise the client's max_frame_bytes",
                prefix=False,
            )
        else:
            self._fail(code, why)

    def _close_in(self, payload: bytes) -> bool:
        if len(payload) == 1:
            return self._fail(1002, "a close frame with a 1-byte body")
        code: int | None = None
        reason = ""
        if payload:
            code = int.from_bytes(payload[:2], "big")
            try:
                reason = payload[2:].decode()
            except UnicodeDecodeError:
                return self._fail(1007, "a close reason that is not UTF-8")
        self.close_rcvd = (code, reason)
        if not self.close_sent:  # answer it (RFC 6455 5.5.1), with its code
            self.pending.append(self.close(code if code is not None else 1000))
        return False

    def _fail(self, code: int, why: str, prefix: bool = True) -> bool:
        self.error = ConnectionClosed(f"protocol error: {why}" if prefix else why)
        if not self.close_sent:
            self.pending.append(self.close(code))
        return False
