"""RFC 6455 frames after the handshake: one reader and one header writer for both ends.

The clients (``openenv/client/_frames.py``) and the server's direct protocol
(``openenv/server/_direct.py``) read frames with the same ``FrameReader``; they differ
only in configuration and in what they do with what it finds:

* ``masked``: a server reads masked frames (``masked=True``), a client unmasked ones;
  a frame masked the other way is refused.
* ``max_size``: the largest message (all of its fragments) accepted; a frame that
  would pass it is refused as soon as its header arrives, before its payload. Each
  fragment is charged ``FRAGMENT_COST`` bytes on top of its payload, and a message
  has at most ``MAX_FRAGMENTS`` fragments: a flood of empty continuation frames is
  refused (1009) like an oversized message, holding at most a few hundred KiB.

A message left unfinished (``unfinished``) is the owner's to bound in time: the reader
does no I/O and keeps no clock, but says since when a fragmented message has been
open (``fragment_started``) and how many bytes it has consumed (``consumed``), so a
timer can tell a stalled message from a stream of finished ones. ``release`` drops
every buffer at once (the socket is gone).

A subclass says what happens next through three hooks: ``message`` (a whole text or
binary message, fragments joined, text decoded), ``control`` (a well-formed ping,
pong or close frame; returning False stops reading) and ``refuse`` (a protocol
error, with its RFC 6455 close code). After a refusal or a stop, ``feed`` reads no
more; the unread bytes go to ``refuse``/``stop`` (the server hands them to
websockets' parser, the client drops them).

No I/O and no frame objects: the hot path is one header check, one slice (unmasked
in C by websockets' ``apply_mask``) and one ``message`` call.
"""

from __future__ import annotations

import struct
import time

try:  # C, shipped with websockets' wheels
    from websockets.speedups import apply_mask as apply_mask
except ImportError:  # pragma: no cover - a websockets built without its C extension
    from websockets.utils import apply_mask as apply_mask

TEXT, BINARY, CONT, CLOSE, PING, PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA
_CONTROL = (CLOSE, PING, PONG)
#: The most fragments one message may have (websockets' client, fragmenting 16 MiB in
#: 4 KiB pieces, stays under it; an endless run of empty fragments does not).
MAX_FRAGMENTS = 4096
#: Payloads larger than this are read through a memoryview (small ones: slicing is cheaper).
_VIEW_FROM = 1 << 16
#: Bytes charged against ``max_size`` per fragment beyond its payload: what holding it costs.
FRAGMENT_COST = 64


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


class FrameReader:
    """Frames in, for one end of one connection (see the module docstring)."""

    __slots__ = (
        "_buf",
        "_fragment_size",
        "_fragment_text",
        "_fragments",
        "_mask_bit",
        "consumed",
        "fragment_started",
        "max_size",
        "stopped",
    )

    def __init__(self, *, masked: bool, max_size: int | None) -> None:
        self._mask_bit = 0x80 if masked else 0
        #: the largest message accepted, in bytes (None or 0: no limit)
        self.max_size = max_size or None
        #: True once a refusal or a ``control`` hook ended reading
        self.stopped = False
        self._buf = bytearray()
        self._fragments: list[bytes] = []
        self._fragment_text = False
        self._fragment_size = 0
        #: bytes consumed so far (whole frames); counted per ``feed``, not per frame
        self.consumed = 0
        #: ``time.monotonic()`` when the open fragmented message began (0: none open)
        self.fragment_started = 0.0

    @property
    def unfinished(self) -> bool:
        """Part of a message has arrived and its end has not: a partial frame, or fragments."""
        return bool(self._buf) or bool(self._fragments)

    @property
    def held(self) -> int:
        """Bytes held for the unfinished message (its fragments at their cost, and what
        has arrived of its current frame)."""
        return len(self._buf) + self._fragment_size

    def release(self) -> None:
        """Stop reading and drop every buffer (the connection is gone)."""
        self._end()
        self._buf = bytearray()

    # --- hooks ----------------------------------------------------------------------

    def message(self, data: str | bytes) -> None:
        """A whole message: ``str`` for text, ``bytes`` for binary."""
        raise NotImplementedError

    def control(self, opcode: int, payload: bytes, frame: bytes) -> bool:
        """A well-formed control frame (``payload`` unmasked, ``frame`` as it came);
        False stops reading (``stop`` gets what is left)."""
        raise NotImplementedError

    def refuse(self, code: int, why: str, rest: bytes | None) -> None:
        """A protocol error; ``rest``: the bytes from the offending frame on, or None
        when the offending message was already read (bad UTF-8)."""
        raise NotImplementedError

    def stop(self, rest: bytes) -> None:
        """Reading ended after a control frame; ``rest`` is what arrived after it."""

    # --- reading --------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Read what arrived; whole messages and control frames go to the hooks."""
        if self.stopped:
            return
        buf = self._buf
        buf += data
        pos, size, limit = 0, len(buf), self.max_size
        mask_bit = self._mask_bit
        mask_len = 4 if mask_bit else 0
        while size - pos >= 2:
            header = length_at(buf, pos, size)
            if header is None:
                break
            length, start = header
            b0, b1 = buf[pos], buf[pos + 1]
            opcode = b0 & 0x0F
            if (
                (b1 & 0x80) != mask_bit
                or b0 & 0x70
                or opcode > 2
                or (opcode == 0) != bool(self._fragments)
                or (limit is not None and length + self._fragment_size > limit)
            ):
                problem = self._problem(b0, b1, length)
                if problem is not None:
                    self._end()
                    self.refuse(*problem, rest=bytes(buf[pos:]))
                    buf.clear()
                    return
                end = start + mask_len + length  # a control frame, read whole
                if end > size:
                    break
                frame = bytes(buf[pos:end])
                payload = self._payload(buf, start, end, mask_len)
                pos = end
                if not self.control(opcode, payload, frame):
                    self._end()
                    rest = bytes(buf[pos:])
                    buf.clear()
                    self.stop(rest)
                    return
                continue
            end = start + mask_len + length
            if end > size:
                break
            if not b0 & 0x80:
                if len(self._fragments) >= MAX_FRAGMENTS:
                    self._end()
                    why = f"a message of more than {MAX_FRAGMENTS} fragments"
                    self.refuse(1009, why, rest=bytes(buf[pos:]))
                    buf.clear()
                    return
                if opcode:
                    self._fragment_text = opcode == TEXT
                    self.fragment_started = time.monotonic()
                self._fragments.append(self._payload(buf, start, end, mask_len))
                self._fragment_size += length + FRAGMENT_COST
                pos = end
                continue
            payload = self._payload(buf, start, end, mask_len)
            pos = end
            if opcode == CONT:
                self._fragments.append(payload)
                payload = b"".join(self._fragments)
                opcode = TEXT if self._fragment_text else BINARY
                self._fragments, self._fragment_size, self.fragment_started = [], 0, 0.0
            if opcode == TEXT:
                try:
                    text = payload.decode()
                except UnicodeDecodeError as exc:
                    self._end()
                    buf.clear()
                    self.refuse(1007, f"a text frame that is not UTF-8: {exc}", rest=None)
                    return
                self.message(text)
            else:
                self.message(payload)
        if pos:
            del buf[:pos]
            self.consumed += pos

    @staticmethod
    def _payload(buf: bytearray, start: int, end: int, mask_len: int) -> bytes:
        if end - start > _VIEW_FROM:  # one copy, not three: unmasked (or copied) from a view
            with memoryview(buf) as view:
                if mask_len:
                    return apply_mask(view[start + 4 : end], bytes(buf[start : start + 4]))
                return bytes(view[start:end])
        if mask_len:
            return apply_mask(bytes(buf[start + 4 : end]), bytes(buf[start : start + 4]))
        return bytes(buf[start:end])

    def _end(self) -> None:
        self.stopped = True
        self._fragments, self._fragment_size, self.fragment_started = [], 0, 0.0

    def _problem(self, b0: int, b1: int, length: int) -> tuple[int, str] | None:
        """What is wrong with a frame whose header left the fast path: ``(close code,
        why)``, or None for a well-formed control frame."""
        opcode = b0 & 0x0F
        if (b1 & 0x80) != self._mask_bit:
            return 1002, "an unmasked frame (a client's)" if self._mask_bit else "a masked frame (a server's)"
        if b0 & 0x70:
            return 1002, "reserved bits set (no extension was negotiated)"
        limit = self.max_size
        if limit is not None and length + self._fragment_size > limit:
            return 1009, f"a message over the limit of {limit} bytes"
        if opcode in _CONTROL:
            if not b0 & 0x80 or length > 125:
                return 1002, "a fragmented or oversized control frame"
            return None
        if opcode == CONT:
            return 1002, "a continuation frame outside a message"
        if opcode in (TEXT, BINARY):
            return 1002, "a new message inside a fragmented one"
        return 1002, f"unknown opcode {opcode:#x}"
