"""RFC 6455 framing for an open client connection, both clients' hot path.

websockets' sans-I/O protocol does the opening handshake (request, ``Sec-WebSocket-Accept``
check, subprotocol); from the ``101`` on, a ``Framer`` does the framing: about 2 us a
message each way where the general-purpose parser costs 5-8 us. It covers what a client
must: masked frames out; unmasked frames in, fragmented or not; pings answered; close
frames answered and reported; the frame-size limit; bad UTF-8 and protocol errors
failing the connection with the codes RFC 6455 gives. No extensions are negotiated
(the clients offer none), so reserved bits are an error.

The ``Framer`` does no I/O: ``feed`` takes bytes read, ``messages`` holds what arrived,
``pending`` holds control frames to write (pongs, close replies), and ``text``,
``binary``, ``close`` return frames to write.
"""

from __future__ import annotations

import os
import struct
from collections import deque

from .._exceptions import ConnectionClosed

try:  # C, shipped with websockets' wheels
    from websockets.speedups import apply_mask as apply_mask
except ImportError:  # pragma: no cover - a websockets built without its C extension
    from websockets.utils import apply_mask as apply_mask

TEXT, BINARY, CONT, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA
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


def length_at(buf: bytearray, pos: int, size: int) -> tuple[int, int] | None:
    """``(payload length, where the length field ends)`` of the frame at ``pos`` (at
    least 2 bytes there); None while its extended length has not all arrived."""
    length = buf[pos + 1] & 0x7F
    if length == 126:
        if size - pos < 4:
            return None
        return int.from_bytes(buf[pos + 2 : pos + 4], "big"), pos + 4
    if length == 127:
        if size - pos < 10:
            return None
        return int.from_bytes(buf[pos + 2 : pos + 10], "big"), pos + 10
    return length, pos + 2


def frame_header(opcode: int, n: int, mask_bit: int) -> bytes:
    """A final frame's header for ``n`` payload bytes; ``mask_bit`` 0x80 (client) or 0."""
    if n < 126:
        return bytes((0x80 | opcode, mask_bit | n))
    if n < 65536:
        return struct.pack("!BBH", 0x80 | opcode, mask_bit | 126, n)
    return struct.pack("!BBQ", 0x80 | opcode, mask_bit | 127, n)


def _frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    return frame_header(opcode, len(payload), 0x80) + mask + apply_mask(payload, mask)


class Framer:
    """The framing state of one open client connection."""

    __slots__ = (
        "_buf",
        "_fragment_size",
        "_fragment_text",
        "_fragments",
        "close_rcvd",
        "close_sent",
        "error",
        "max_size",
        "messages",
        "pending",
    )

    def __init__(self, max_size: int | None) -> None:
        self.max_size = max_size
        self.messages: deque[str | bytes] = deque()
        self.pending: list[bytes] = []
        #: ``(code, reason)`` of the server's close frame (code None: it sent none)
        self.close_rcvd: tuple[int | None, str] | None = None
        self.close_sent = False
        #: why the connection failed on our side (a protocol error, a frame too large)
        self.error: ConnectionClosed | None = None
        self._buf = bytearray()
        self._fragments: list[bytes] = []
        self._fragment_text = False
        self._fragment_size = 0

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

    # --- in -----------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Parse what arrived; complete messages go to ``messages``."""
        if self.error is not None or self.close_rcvd is not None:
            return
        buf = self._buf
        buf += data
        pos, size, limit = 0, len(buf), self.max_size
        while size - pos >= 2:
            header = length_at(buf, pos, size)
            if header is None:
                break
            length, start = header
            b0, b1 = buf[pos], buf[pos + 1]
            if b1 & 0x80 or b0 & 0x70:
                self._fail(1002, "a masked frame or reserved bits from the server")
                return
            if limit and length + self._fragment_size > limit:
                self._fail(
                    1009,
                    f"a frame from the server was over this client's limit (over {limit} bytes); "
                    "raise the client's max_frame_bytes",
                    prefix=False,
                )
                return
            end = start + length
            if end > size:
                break
            payload = bytes(buf[start:end])
            pos = end
            if not self._frame_in(b0 & 0x80, b0 & 0x0F, payload):
                return
        if pos:
            del buf[:pos]

    def eof(self) -> None:
        """The server closed the TCP stream."""
        if self.close_rcvd is None and self.error is None:
            self.close_rcvd = (None, "")

    def _frame_in(self, fin: int, opcode: int, payload: bytes) -> bool:
        if opcode in (TEXT, BINARY):
            if self._fragments:
                return self._fail(1002, "a new message inside a fragmented one")
            if fin:
                return self._deliver(payload, opcode == TEXT)
            self._fragments, self._fragment_text = [payload], opcode == TEXT
            self._fragment_size = len(payload)
            return True
        if opcode == CONT:
            if not self._fragments:
                return self._fail(1002, "a continuation frame outside a message")
            self._fragments.append(payload)
            self._fragment_size += len(payload)
            if fin:
                whole = b"".join(self._fragments)
                self._fragments, self._fragment_size = [], 0
                return self._deliver(whole, self._fragment_text)
            return True
        if opcode >= 0x8 and (not fin or len(payload) > 125):
            return self._fail(1002, "a fragmented or oversized control frame")
        if opcode == PING:
            if not self.close_sent:
                self.pending.append(_frame(PONG, payload))
            return True
        if opcode == PONG:
            return True
        if opcode == CLOSE:
            return self._close_in(payload)
        return self._fail(1002, f"unknown opcode {opcode:#x}")

    def _deliver(self, payload: bytes, text: bool) -> bool:
        if not text:
            self.messages.append(payload)
            return True
        try:
            self.messages.append(payload.decode())
        except UnicodeDecodeError as exc:
            return self._fail(1007, f"a text frame that is not UTF-8: {exc}")
        return True

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
