"""A bounded output buffer: keeps the head and the tail, counts what it dropped."""

from __future__ import annotations


class HeadTail:
    """Keeps at most ``limit`` bytes: the first half and the last half of everything fed.

    >>> buf = HeadTail(8)
    >>> buf.feed(b"0123456789abcdef")
    >>> buf.getvalue(), buf.omitted
    (b'0123cdef', 8)
    """

    __slots__ = ("_head", "_head_limit", "_tail", "_tail_limit", "omitted", "total")

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError("limit must be >= 0")
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.omitted = 0  # bytes dropped between head and tail
        self.total = 0  # bytes fed

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        extra = len(self._tail) - self._tail_limit
        if extra > 0:
            del self._tail[:extra]
            self.omitted += extra

    def getvalue(self) -> bytes:
        return bytes(self._head + self._tail)

    def take(self) -> tuple[bytes, int]:
        """The kept bytes and the omitted count; the buffer starts over empty."""
        value, omitted = self.getvalue(), self.omitted
        self._head.clear()
        self._tail.clear()
        self.omitted = 0
        self.total = 0
        return value, omitted

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)
