"""Our clients against upstream 0.10.0's capacity refusal, replayed byte for byte.

Upstream's server accepts the WebSocket (101), at once sends one unsolicited error
frame and closes with 1000 (``UPSTREAM_FRAMES.md``, "capacity reached"). Whether the
client reads the 101 alone or the 101, the error and the close in one TCP read is
timing; the live test (``test_our_client_upstream_server.py``) hits either by
chance. This fake server forces each case, so the client must surface
``CapacityReached`` in all of them. It needs no upstream install, so it always runs.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from openenv import AsyncEnvClient, CapacityReached, EnvClient

#: Verbatim from upstream 0.10.0 (``--max-sessions 1``, one session held).
UPSTREAM_CAPACITY_FRAME = (
    b'{"type":"error","data":{"message":"Server at capacity: 1/1 sessions active. '
    b'Cannot accept new connections.","code":"CAPACITY_REACHED","active_sessions":1,'
    b'"max_sessions":1}}'
)
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _server_frame(opcode: int, payload: bytes) -> bytes:
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return header + payload


class RefusingServer:
    """Accepts WebSockets the way upstream does at capacity, on 127.0.0.1.

    ``together=True``: 101 + error frame + Close 1000 in ONE ``sendall``.
    ``together=False``: the 101 first, the rest 0.2 s later.
    """

    def __init__(self, together: bool) -> None:
        self.together = together
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.handled = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    self._handle(conn)
                self.handled += 1

    def _handle(self, conn: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = conn.recv(4096)
            if not chunk:
                return
            request += chunk
        key = next(
            line.split(b":", 1)[1].strip()
            for line in request.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key:")
        )
        accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
        response = (
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\nserver: uvicorn\r\n\r\n"
        )
        rest = _server_frame(0x1, UPSTREAM_CAPACITY_FRAME) + _server_frame(0x8, struct.pack("!H", 1000))
        if self.together:
            conn.sendall(response + rest)
        else:
            conn.sendall(response)
            time.sleep(0.2)
            conn.sendall(rest)
        # Take what the client sends (its frame, its close reply), then close the TCP
        # connection as a server does after the close handshake: once it goes quiet.
        conn.settimeout(0.3)
        deadline = time.monotonic() + 5
        with contextlib.suppress(TimeoutError):
            while time.monotonic() < deadline and conn.recv(4096):
                pass

    def __enter__(self) -> RefusingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        self.sock.close()


@pytest.fixture(params=[True, False], ids=["one-read", "split"])
def refusing(request: pytest.FixtureRequest) -> Iterator[RefusingServer]:
    with RefusingServer(together=request.param) as server:
        yield server


def _check(err: CapacityReached) -> None:
    assert err.code == "CAPACITY_REACHED"
    assert err.details == {"active_sessions": 1, "max_sessions": 1}
    assert err.message.startswith("Server at capacity: 1/1 sessions active.")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("delay_s", [0.0, 0.4], ids=["send-now", "send-late"])
def test_sync_client_surfaces_capacity(refusing: RefusingServer, delay_s: float) -> None:
    env = EnvClient(f"http://127.0.0.1:{refusing.port}", timeout_s=5, connect_timeout_s=5)
    try:
        env.connect()
        time.sleep(delay_s)
        with pytest.raises(CapacityReached) as info:
            env.reset()
        _check(info.value)
    finally:
        env.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("delay_s", [0.0, 0.4], ids=["send-now", "send-late"])
async def test_async_client_surfaces_capacity(refusing: RefusingServer, delay_s: float) -> None:
    import asyncio

    env = AsyncEnvClient(f"http://127.0.0.1:{refusing.port}", timeout_s=5, connect_timeout_s=5)
    try:
        await env.connect()
        await asyncio.sleep(delay_s)
        with pytest.raises(CapacityReached) as info:
            await env.reset()
        _check(info.value)
    finally:
        await env.close()
