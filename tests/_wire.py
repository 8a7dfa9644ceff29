"""Raw-frame helpers: the plain ``websockets`` sync client, every reply checked.

Every frame read here is validated against the server reply models
(``openenv._protocol.SERVER_MESSAGE``), so each test that reads a reply also checks
its shape.
"""

from __future__ import annotations

import base64
import os
import socket
from typing import Any

import msgpack
import orjson
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from openenv._protocol import SERVER_MESSAGE
from openenv._types import SUBPROTOCOL

RECV_TIMEOUT_S = 10.0


def connect(url: str, extended: bool = False, **kwargs: Any) -> ClientConnection:
    """A raw, open WebSocket to ``url`` (``.../ws``); ``extended`` offers ``openenv.v1``.

    Usable directly or as a context manager (which closes it).
    """
    return ws_connect(
        url,
        subprotocols=[SUBPROTOCOL] if extended else None,  # type: ignore[list-item]
        open_timeout=5,
        close_timeout=2,
        max_size=None,
        compression=None,
        ping_interval=None,
        **kwargs,
    ).__enter__()


def send(ws: ClientConnection, message: dict[str, Any], binary: bool = False) -> None:
    if binary:
        ws.send(msgpack.packb(message, use_bin_type=True))
    else:
        ws.send(orjson.dumps(message).decode())


def recv(ws: ClientConnection, timeout_s: float = RECV_TIMEOUT_S, binary: bool = False) -> dict[str, Any]:
    """The next reply, decoded and validated; its frame kind must match ``binary``."""
    raw = ws.recv(timeout=timeout_s)
    if binary:
        assert isinstance(raw, bytes), f"expected a binary frame, got {raw!r}"
        msg = msgpack.unpackb(raw, raw=False)
    else:
        assert isinstance(raw, str), f"expected a text frame, got {raw!r}"
        msg = orjson.loads(raw)
    SERVER_MESSAGE.validate_python(msg)
    return msg  # type: ignore[no-any-return]


def call(ws: ClientConnection, message: dict[str, Any], binary: bool = False,
         timeout_s: float = RECV_TIMEOUT_S) -> dict[str, Any]:
    send(ws, message, binary)
    return recv(ws, timeout_s, binary)


def expect_error(reply: dict[str, Any], code: str) -> dict[str, Any]:
    assert reply["type"] == "error", reply
    assert reply["data"]["code"] == code, reply
    assert isinstance(reply["data"]["message"], str)
    assert reply["data"]["message"]
    return reply["data"]  # type: ignore[no-any-return]


def expect_closed(ws: ClientConnection, timeout_s: float = RECV_TIMEOUT_S) -> int | None:
    """Wait for the server to close the socket; return its close code."""
    try:
        while True:
            extra = ws.recv(timeout=timeout_s)
            pytest.fail(f"expected the socket to close, got a frame: {extra!r}")
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd is not None else None


def raw_handshake(port: int, subprotocol: str | None = None) -> socket.socket:
    """Complete a WebSocket handshake on a bare TCP socket and return it.

    The caller then owns a socket that never answers pings (it never reads).
    """
    # 30 s: a loaded host (two suites at once) once kept an in-process server from
    # answering a first frame within 5 s
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /ws HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if subprotocol:
        lines.append(f"Sec-WebSocket-Protocol: {subprotocol}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError(f"server closed during the handshake: {response!r}")
        response += chunk
    assert response.startswith(b"HTTP/1.1 101"), response
    return sock


def masked_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One client (masked) WebSocket frame."""
    header = bytearray([0x80 | opcode])
    n = len(payload)
    if n < 126:
        header.append(0x80 | n)
    elif n < 65536:
        header.append(0x80 | 126)
        header += n.to_bytes(2, "big")
    else:
        header.append(0x80 | 127)
        header += n.to_bytes(8, "big")
    mask = os.urandom(4)
    header += mask
    return bytes(header) + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
