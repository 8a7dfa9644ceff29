"""The server's end of a pipe pair to a sandboxed process: frames under deadlines.

A frame is a 12-byte header (body length, request id; big-endian ``>IQ``) and a JSON
body. The server sends each request with a new id, and the process answers with the
same id. Nothing on the far side is trusted, so here:

* every write and every read has a deadline: a process that stops reading (or is
  stopped, SIGSTOP) costs its caller the deadline, never a thread for good;
* a frame longer than the caller allows is a broken channel, found from the header
  before a byte of the body is read;
* a frame whose id is not the one awaited (stale) is skipped without being copied or
  decoded, and more than ``stale_limit`` bytes of them in one wait break the channel:
  a flood costs the server a few reads, then ends.

No lock is held while waiting: one thread sends and receives; others only close.
"""

from __future__ import annotations

import errno
import json
import os
import select
import struct
import subprocess
import time
from collections.abc import Callable
from typing import Any

HEADER = struct.Struct(">IQ")
#: Control frames (the process speaking unasked, ``id`` 0) are at most this long.
CONTROL_MAX = 4096
_CHUNK = 1 << 16
_POLL_S = 0.25  # how often a wait checks that the process is still alive
#: Stale frames (only a process that floods its channel sends any) are skipped unread;
#: this many longest frames' worth of them in one wait break the channel.
STALE_FRAMES = 4


class ChannelBroken(Exception):
    """The process is gone, broke the protocol, or missed a deadline on a write.
    ``timed_out``: it stopped reading (a write ran past its deadline)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out

    def about(self, who: str) -> str:
        """The message with ``who`` for "the process"."""
        return str(self).replace("the process", who, 1)


def encode(obj: dict[str, Any], tag: int) -> bytes:
    body = json.dumps(obj).encode()
    return HEADER.pack(len(body), tag) + body


class Channel:
    """Frames to ``wfd`` and from ``rfd`` (both set non-blocking here)."""

    def __init__(
        self,
        wfd: int,
        rfd: int,
        *,
        max_frame: int,
        stale_limit: int,
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        self.wfd, self.rfd = wfd, rfd
        self.max_frame = max_frame
        self.stale_limit = stale_limit
        self._alive = alive
        self._buf = bytearray()  # read, not yet taken
        self._scratch = bytearray(_CHUNK)  # where skipped bytes go
        self._skipping = 0  # what is left to skip of a stale body
        os.set_blocking(wfd, False)
        os.set_blocking(rfd, False)

    @classmethod
    def to_process(cls, proc: subprocess.Popen[bytes], *, max_frame: int) -> Channel:
        """The channel over ``proc``'s stdin and stdout pipes (broken once it exits),
        with up to ``STALE_FRAMES`` longest frames' worth of stale ones per wait."""
        assert proc.stdin is not None
        assert proc.stdout is not None
        return cls(
            proc.stdin.fileno(),
            proc.stdout.fileno(),
            max_frame=max_frame,
            stale_limit=STALE_FRAMES * max_frame,
            alive=lambda: proc.poll() is None,
        )

    # ---- writing -----------------------------------------------------------------
    def send(self, frame: bytes, deadline: float) -> None:
        """Write all of ``frame`` by ``deadline``; ``ChannelBroken`` if not."""
        view = memoryview(frame)
        while view:
            try:
                view = view[os.write(self.wfd, view) :]
                continue
            except BlockingIOError:
                pass
            except (OSError, ValueError) as exc:
                raise ChannelBroken(f"the process is gone ({_why(exc)})") from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelBroken("the process stopped reading its input", timed_out=True)
            self._wait(self.wfd, write=True, left=left)

    # ---- reading -----------------------------------------------------------------
    def recv(self, tag: int, deadline: float) -> dict[str, Any] | None:
        """The next frame with id ``tag`` or 0 (control), decoded; None at ``deadline``.
        Frames with other ids are skipped unread."""
        stale = 0
        while True:
            if self._skipping and not self._skip(deadline):
                return None
            if not self._need(HEADER.size, deadline):
                return None
            size, got = HEADER.unpack_from(self._buf)
            wanted = got == tag or got == 0
            limit = (self.max_frame if got == tag else CONTROL_MAX) if wanted else self.max_frame
            if size > limit:
                raise ChannelBroken(f"the process sent a frame of {size} bytes (at most {limit})")
            if not wanted:
                stale += size + HEADER.size
                if stale > self.stale_limit:
                    raise ChannelBroken("the process flooded its channel with stale frames")
                del self._buf[: HEADER.size]
                self._skipping = size
                continue
            if not self._need(HEADER.size + size, deadline):
                return None
            body = bytes(self._buf[HEADER.size : HEADER.size + size])
            del self._buf[: HEADER.size + size]
            try:
                frame = json.loads(body)
            except ValueError:
                frame = None
            if not isinstance(frame, dict):
                raise ChannelBroken("the process sent a malformed frame")
            return frame

    def _need(self, n: int, deadline: float) -> bool:
        """Read until the buffer holds ``n`` bytes; False at ``deadline``."""
        while len(self._buf) < n:
            if not self._wait_readable(deadline):
                return False
            try:
                chunk = os.read(self.rfd, max(n - len(self._buf), _CHUNK))
            except BlockingIOError:
                continue
            except OSError as exc:
                raise ChannelBroken(f"the process is gone ({_why(exc)})") from None
            if not chunk:
                raise ChannelBroken("the process exited")
            self._buf += chunk
        return True

    def _skip(self, deadline: float) -> bool:
        """Discard the stale body being skipped: what is buffered, then the rest read
        into one scratch buffer, never kept. False at ``deadline`` (resumed later)."""
        take = min(self._skipping, len(self._buf))
        del self._buf[:take]
        self._skipping -= take
        view = memoryview(self._scratch)
        while self._skipping:
            if not self._wait_readable(deadline):
                return False
            try:
                got = os.readv(self.rfd, [view[: min(self._skipping, _CHUNK)]])
            except BlockingIOError:
                continue
            except OSError as exc:
                raise ChannelBroken(f"the process is gone ({_why(exc)})") from None
            if not got:
                raise ChannelBroken("the process exited")
            self._skipping -= got
        return True

    def _wait_readable(self, deadline: float) -> bool:
        """Wait (a poll interval at most) for input; False once ``deadline`` passed."""
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if not self._wait(self.rfd, write=False, left=left) and not self._alive():
            raise ChannelBroken("the process exited")  # a forked child may hold the pipe open
        return True

    def _wait(self, fd: int, *, write: bool, left: float) -> bool:
        try:
            if write:
                return bool(select.select([], [fd], [], min(left, _POLL_S))[1])
            return bool(select.select([fd], [], [], min(left, _POLL_S))[0])
        except (OSError, ValueError) as exc:  # the fd was closed under us
            raise ChannelBroken(f"the process is gone ({_why(exc)})") from None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return type(exc).__name__
