"""A direct message channel from uvicorn's WebSocket protocol to the ``/ws`` loop.

ASGI hands each WebSocket message to the app through an ``asyncio.Queue`` of dicts,
and uvicorn's sans-I/O protocol pauses reading after every message and resumes it on
the next ``receive`` (two ``epoll_ctl`` calls per message). Our ``/ws`` loop needs
neither: ``DirectWebSocketsProtocol`` is that protocol with one addition. The
handshake, routing, middleware and ``accept`` still go through ASGI; the scope then
carries ``DirectChannel`` under ``extensions["openenv.direct"]``, and a loop that
enables it receives ``str``/``bytes`` straight from the parser and writes replies
straight to the transport. Reading pauses only when the backlog passes a high-water
mark; writing still waits while the transport is paused. Any other ASGI server, or a
uvicorn whose protocol does not have the internals this relies on, serves the same
app through plain ASGI (``protocol_class()`` returns ``None``).

Limits that hold whatever the peer sends: a protocol error or a message over the
limits (size, ``MAX_FRAGMENTS``) fails the connection with its RFC 6455 code at once;
a message unfinished after ``message_timeout_s`` (its fragments, or one frame
trickling in) fails it with 1008. When the socket goes, every buffer is dropped and
the links between protocol, reader and channel are cut, so nothing waits for the
cyclic garbage collector.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import Protocol, State

from .._wsframes import MAX_FRAGMENTS, FrameReader, frame_header

#: Bytes held in unfinished messages by every connection of this process (one cell).
_HELD = [0]
#: Messages a connection may hold unread before reading from the socket pauses.
HIGH_WATER = 64
LOW_WATER = 16

_NEEDED = (
    "handle_connect",
    "send_receive_event_to_app",
    "handle_parser_exception",
    "connection_lost",
)


class DirectChannel:
    """What the ``/ws`` loop sees: ``recv`` (``None`` once the peer is gone) and ``send``."""

    def __init__(self, protocol: Any) -> None:
        self._p: Any = protocol
        self._inbox: deque[str | bytes] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.enabled = False

    def enable(self) -> None:
        """Take over from ASGI ``receive``: anything already queued moves to the inbox."""
        p = self._p
        if p is None:  # the socket is already gone
            self.enabled = True
            return
        queue = p.queue
        while not queue.empty():
            message = queue.get_nowait()
            if message["type"] == "websocket.receive":
                text = message.get("text")
                self._inbox.append(text if text is not None else message["bytes"])
            else:
                self.closed = True
        p.queue = _Signals(self)
        self.enabled = True
        if p.read_paused and len(self._inbox) < HIGH_WATER:
            p.read_paused = False
            p.transport.resume_reading()

    # --- the protocol's side --------------------------------------------------------

    def deliver(self, data: str | bytes) -> None:
        inbox = self._inbox
        inbox.append(data)
        p = self._p
        if len(inbox) >= HIGH_WATER and not p.read_paused:
            p.read_paused = True
            p.transport.pause_reading()
        self._wake()

    def end(self) -> None:
        self.closed = True
        self._wake()

    def release(self) -> None:
        """The socket is gone: drop unread messages and the link to the protocol."""
        self.end()
        self._inbox.clear()
        self._p = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the loop's side ------------------------------------------------------------

    async def recv(self) -> str | bytes | None:
        inbox = self._inbox
        while not inbox:
            if self.closed:
                return None
            self._waiter = self._p.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        p = self._p
        if p.read_paused and len(inbox) <= LOW_WATER and p.writable.is_set():
            p.read_paused = False
            p.transport.resume_reading()
        return inbox.popleft()

    async def send(self, frame: str | bytes) -> bool:
        """Write one message; False once the connection is closing or gone."""
        p = self._p
        if p is None:
            return False
        if not p.writable.is_set():
            await p.writable.wait()
            if self._p is None:
                return False
        # gone, or the closing handshake has begun (ours or the peer's)
        if p.disconnected or p.close_sent or p.transport.is_closing() or p.conn.state is not State.OPEN:
            return False
        p.transport.write(server_frame(frame))
        return True


def server_frame(message: str | bytes) -> bytes:
    """One unmasked frame, as a server sends it."""
    if isinstance(message, str):
        payload = message.encode()
        return frame_header(0x1, len(payload), 0) + payload
    return frame_header(0x2, len(message), 0) + message


class _Signals:
    """Stands in for the ASGI queue once the channel is enabled: uvicorn still reports
    disconnects by putting them there; those end the channel."""

    def __init__(self, channel: DirectChannel) -> None:
        self._channel = channel

    def put_nowait(self, message: Any) -> None:
        if message.get("type") == "websocket.disconnect":
            self._channel.end()

    def empty(self) -> bool:
        return True

    async def get(self) -> Any:  # only reached if someone calls ASGI receive after enable
        return {"type": "websocket.disconnect", "code": 1006}


class _ServerFrames(FrameReader):
    """The shared ``FrameReader`` configured for a server (masked frames in, the
    configured limit), feeding one connection's ``DirectChannel``. Control frames and
    every byte from a refused frame on go to websockets' parser, which answers them
    (pongs, the closing handshake, the close code of a protocol error)."""

    __slots__ = ("_p",)

    def __init__(self, protocol: DirectWebSocketsProtocol, max_size: int | None) -> None:
        super().__init__(masked=True, max_size=max_size)
        self._p: Any = protocol

    def unlink(self) -> None:
        """The connection is gone: drop the link back to the protocol."""
        self._p = None

    def message(self, data: str | bytes) -> None:
        if not self._p.close_sent:
            self._p.direct.deliver(data)

    def control(self, opcode: int, payload: bytes, frame: bytes) -> bool:
        p = self._p
        p.general_data_received(frame)
        return not (p.close_sent or p.transport.is_closing())

    def refuse(self, code: int, why: str, rest: bytes | None) -> None:
        # Failed here, with our code: websockets' parser does not know the fragments
        # read so far (a new message inside one would pass there as a message).
        self._p.fail(code, why)

    def stop(self, rest: bytes) -> None:
        p = self._p
        p.general = True
        if rest:
            p.general_data_received(rest)


class DirectWebSocketsProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol with a ``DirectChannel`` in the scope."""

    #: the longest a message may take to arrive whole once its first byte has
    message_timeout_s: float = 60.0
    #: called once when the socket goes (``_guard.py`` gives the connection's place back)
    on_lost: Any = None
    #: the most bytes all connections of this process may hold in unfinished messages;
    #: past it, the connection whose message grows is closed (1008)
    unfinished_budget: int = 256 * 1024 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.direct = DirectChannel(self)
        #: once anything unusual arrives, websockets' parser takes every byte from there on
        self.general = False
        self.frames_in = _ServerFrames(self, self.conn.max_message_size)
        self._message_timer: asyncio.TimerHandle | None = None
        self._consumed_at_arming = 0
        self._held = 0  # this connection's share of _HELD

    def data_received(self, data: bytes) -> None:
        """With the channel enabled, ``_ServerFrames`` reads data frames (unmasked in C,
        no frame objects); control frames, and everything after anything unusual, go to
        websockets' parser, always at a frame boundary."""
        if self.direct.enabled and not self.general:
            frames = self.frames_in
            frames.feed(data)
            if frames.unfinished:
                self._hold(frames.held)
                if self._message_timer is None and not frames.stopped:
                    self._arm_message_timer()
            elif self._held:
                self._hold(0)
            return
        if self.handshake_initiated and not self.direct.enabled:
            # Bytes after the request, before the loop took the channel (uvicorn hands
            # this protocol the request alone): websockets may be mid-frame on them,
            # so it keeps parsing this connection.
            self.general = True
        super().data_received(data)

    def general_data_received(self, data: bytes) -> None:
        """Bytes for websockets' parser (uvicorn's own ``data_received``)."""
        super().data_received(data)

    def fail(self, code: int, why: str) -> None:
        """Fail the connection: a close frame with ``code`` (when none was sent yet), then
        the transport closed; nothing more is read."""
        self.frames_in.release()
        _HELD[0] -= self._held
        self._held = 0
        conn = self.conn
        if conn.state is State.OPEN:
            conn.send_close(code, why[:120])
        if conn.close_sent is not None:
            self.handle_parser_exception()
        else:
            self.transport.close()

    # --- an unfinished message is bounded in time, and all of them in bytes ------

    def _hold(self, held: int) -> None:
        total = _HELD[0] + held - self._held
        if held > self._held and total > self.unfinished_budget:
            self.fail(1008, f"the server holds {self.unfinished_budget} bytes of unfinished messages")
            return
        _HELD[0], self._held = total, held

    def _arm_message_timer(self) -> None:
        self._consumed_at_arming = self.frames_in.consumed
        self._message_timer = self.loop.call_later(self.message_timeout_s, self._message_overdue)

    def _message_overdue(self) -> None:
        self._message_timer = None
        frames = self.frames_in
        if frames.stopped or not frames.unfinished or self.transport.is_closing():
            return
        started = frames.fragment_started
        stalled = frames.consumed == self._consumed_at_arming  # not one whole frame since
        if stalled or (started and time.monotonic() - started >= self.message_timeout_s):
            self.fail(1008, f"a message unfinished after {self.message_timeout_s:g} s")
        else:
            self._arm_message_timer()

    def handle_cont(self, event: Any) -> None:
        """websockets' parser reads this connection (bytes came before the channel was
        enabled): the same cap on fragments as ``FrameReader``."""
        if len(self.frames) >= MAX_FRAGMENTS:
            self.frames = []
            self.fail(1009, f"a message of more than {MAX_FRAGMENTS} fragments")
            return
        super().handle_cont(event)

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None:
            scope["extensions"]["openenv.direct"] = self.direct

    def send_receive_event_to_app(self) -> None:
        direct = self.direct
        if not direct.enabled:
            super().send_receive_event_to_app()
            return
        frames = self.frames
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        self.frames = []
        if self.close_sent:
            return
        if self.curr_msg_data_type == "text":
            try:
                text = data.decode()
            except UnicodeDecodeError:
                self.conn.send_close(1007)
                self.handle_parser_exception()
                return
            direct.deliver(text)
        else:
            direct.deliver(bytes(data))

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            # A refused handshake (401 from Admission) was answered in full; uvicorn's
            # sans-I/O protocol does not note it, then logs an error and tries a 500.
            self.handshake_complete = True

    def pause_writing(self) -> None:
        """The peer does not read what we write: stop reading it too (pongs to a flood of
        pings would otherwise pile up in the write buffer)."""
        super().pause_writing()
        if self.direct.enabled and not self.read_paused and not self.transport.is_closing():
            self.read_paused = True
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        direct = self.direct
        if (direct.enabled and self.read_paused and len(direct._inbox) <= LOW_WATER
                and not self.transport.is_closing()):
            self.read_paused = False
            self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self._message_timer is not None:
            self._message_timer.cancel()
            self._message_timer = None
        # Every buffer goes now, and no cycle is left (protocol -> reader -> protocol,
        # protocol -> channel -> protocol) for the garbage collector to find later.
        self.frames = []
        self.frames_in.release()
        _HELD[0] -= self._held
        self._held = 0
        self.frames_in.unlink()
        self.direct.release()
        if self.on_lost is not None:
            self.on_lost()
            self.on_lost = None


def protocol_class(message_timeout_s: float | None = None) -> type | None:
    """The direct protocol class for uvicorn's ``ws`` option (a subclass carrying
    ``message_timeout_s`` when given); None where this uvicorn's protocol lacks the
    internals it relies on (then plain ``websockets-sansio`` serves)."""
    base = WebSocketsSansIOProtocol
    attrs = ("frames", "curr_msg_data_type", "close_sent", "read_paused", "queue", "conn", "writable")
    if (
        all(hasattr(base, name) for name in _NEEDED)
        and all(name in base.__init__.__code__.co_names for name in attrs)
        and "max_message_size" in Protocol.__init__.__code__.co_names  # the frame limit we read
    ):
        if message_timeout_s is None:
            return DirectWebSocketsProtocol
        return type(DirectWebSocketsProtocol.__name__, (DirectWebSocketsProtocol,),
                    {"message_timeout_s": message_timeout_s, "__module__": __name__})
    return None
