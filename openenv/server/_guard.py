"""Connections that cannot hold the server: header deadlines, a cap per client, /health kept.

uvicorn times out nothing before a request's head is complete: a client that opens a
socket and sends a header line every few seconds (or nothing) holds a file descriptor
for ever, and a thousand of them leave none for ``/health``. ``guarded_http`` wraps
uvicorn's HTTP protocol class (httptools or h11) with a ``ConnectionGuard``:

* **a header deadline**: a request's head must be complete ``header_timeout_s`` after
  the connection opened or the previous response ended, and a request body may not
  stall (no byte for as long); else the socket is closed;
* **a cap per client** (peer address): past ``max_connections_per_client`` open
  connections, a new one may only ask ``GET /health`` (anything else, a WebSocket
  handshake included, is answered 503 and closed) under a short deadline; past the cap
  plus ``SPARE``, it is closed at once. The room is the process's open-files limit
  less ``RESERVE``: one client gets at most half of it, and past all of it every new
  connection is held to ``/health`` the same way, so ``/health`` finds a file
  descriptor under a flood (a reserved path, not a separate listener). ``serve``
  first raises the soft open-files limit to the hard one.

A WebSocket connection keeps its place until the socket goes: the HTTP protocol hands
its ticket to the direct WebSocket protocol (``_direct.py``), which gives it back in
``connection_lost``. Counting is per connection (open, close), never per message.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from typing import Any

#: Connections past a client's cap that may still ask for /health, at most, at once.
SPARE = 8
#: File descriptors kept free below the open-files limit (files, the env, /health).
RESERVE = 64
#: The header deadline of a connection past its client's cap (it may only ask /health).
LIMITED_HEADER_TIMEOUT_S = 2.0

_TOO_MANY = b"too many connections from this client: close some\n"
_REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_TOO_MANY), _TOO_MANY)
)


def open_files_limit() -> int | None:
    """This process's soft open-files limit (None: unlimited)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def raise_open_files_limit(cap: int = 1 << 20) -> int | None:
    """Raise the soft open-files limit to the hard one (at most ``cap``), as servers do:
    1,024 (a common default) is a few hundred slow clients. Returns the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):  # not allowed here: keep what we have
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return open_files_limit()


class ConnectionGuard:
    """Open connections per peer address, for one server process."""

    def __init__(self, max_per_client: int, header_timeout_s: float, files: int | None = None) -> None:
        files = open_files_limit() if files is None else files
        room = None if files is None else max(files - RESERVE, 32)
        # one client never holds more than half the room: the rest stays for the others
        self.max_per_client = max_per_client if room is None else min(max_per_client, room // 2)
        self.max_total = room
        self.header_timeout_s = header_timeout_s
        self.open: dict[str, int] = {}
        self.total = 0

    def admit(self, peer: str) -> str:
        """``"ok"``, ``"limited"`` (/health only) or ``"refused"`` (close at once); an
        admitted connection holds a place until ``release``."""
        held = self.open.get(peer, 0)
        over = held >= self.max_per_client or (self.max_total is not None and self.total >= self.max_total)
        if over and (held >= self.max_per_client + SPARE
                     or (self.max_total is not None and self.total >= self.max_total + SPARE)):
            return "refused"
        self.open[peer] = held + 1
        self.total += 1
        return "limited" if over else "ok"

    def release(self, peer: str) -> None:
        held = self.open.get(peer, 0) - 1
        if held > 0:
            self.open[peer] = held
        else:
            self.open.pop(peer, None)
        self.total -= 1


def _health_only(app: Any) -> Any:
    """The app for a connection past its client's cap: ``GET /health`` only."""

    async def limited(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/health" and scope["method"] in ("GET", "HEAD"):
            await app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": _TOO_MANY})

    return limited


class _GuardedHttp:
    """Mixed into uvicorn's HTTP protocol class (see ``guarded_http``)."""

    guard: ConnectionGuard
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    client: tuple[str, int] | None
    cycle: Any
    app: Any

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._reads = 0  # data_received calls: progress of a body
        self._peer: str | None = None
        self._header_timer: asyncio.TimerHandle | None = None
        self._limited = False
        peer = self.client[0] if self.client else None
        if peer is None:  # a Unix socket: nothing to count
            self._arm(self.guard.header_timeout_s)
            return
        verdict = self.guard.admit(peer)
        if verdict == "refused":
            transport.abort()
            return
        self._peer = peer
        if verdict == "limited":
            self._limited = True
            self.app = _health_only(self.app)
            self._arm(min(LIMITED_HEADER_TIMEOUT_S, self.guard.header_timeout_s))
        else:
            self._arm(self.guard.header_timeout_s)

    def data_received(self, data: bytes) -> None:
        self._reads += 1
        super().data_received(data)  # type: ignore[misc]

    def _arm(self, timeout_s: float) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(timeout_s, self._header_overdue, self.cycle, self._reads)

    def _header_overdue(self, cycle: Any, reads: int) -> None:
        """No request head since the timer was armed: close. A request running: its body
        must keep coming (nothing for a whole period closes it too); look again later."""
        self._header_timer = None
        if self.transport.is_closing():
            return
        now = self.cycle
        if now is None or now.response_complete:
            if now is cycle:  # (a pipelined request may have been read before)
                self.transport.close()
            return
        if now.more_body and self._reads == reads:
            self.transport.close()  # the app's receive() gets http.disconnect
            return
        self._arm(self.guard.header_timeout_s)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._arm(LIMITED_HEADER_TIMEOUT_S if self._limited else self.guard.header_timeout_s)

    def handle_websocket_upgrade(self, *args: Any) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if self._limited:
            self.transport.write(_REFUSED)
            self.transport.close()
            return
        super().handle_websocket_upgrade(*args)  # type: ignore[misc]
        ws = self.transport.get_protocol()
        if hasattr(ws, "on_lost") and self._peer is not None:  # the direct protocol (_direct.py)
            ws.on_lost = self._handed_over(self._peer)  # its place is the WebSocket's now
            self._peer = None

    def _handed_over(self, peer: str) -> Any:
        guard = self.guard

        def release() -> None:
            guard.release(peer)

        return release

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)  # type: ignore[misc]
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if self._peer is not None:
            self.guard.release(self._peer)
            self._peer = None


def guarded_http(base: type, guard: ConnectionGuard) -> type:
    """uvicorn's HTTP protocol class ``base`` with ``guard``'s deadlines and caps."""
    return type(f"Guarded{base.__name__}", (_GuardedHttp, base), {"guard": guard, "__module__": __name__})
