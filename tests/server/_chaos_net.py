"""The network half of the chaos test: attackers (slow clients, fragment floods, huge frames, a
ping flood, a cross-origin page), run in a child process of their own
(so their Python never competes with the victim's for a GIL).

``attack(port, seconds)`` runs every attacker at once for ``seconds`` and returns what
each did. Every loop is bounded in time; every socket is closed at the end.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from .._wire import raw_handshake
from ._net import CONT, TEXT, close_code, frame

PING = 0x9


def _until(stop: float) -> bool:
    return time.monotonic() < stop


def slow_http(port: int, stop: float, n: int = 200) -> dict[str, Any]:
    """``n`` connections from 127.0.0.2 sending a header line a second, never a whole head;
    each one the server closes is opened again."""
    socks: list[socket.socket] = []
    opened = 0

    def one() -> socket.socket | None:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=("127.0.0.2", 0))
            s.sendall(b"GET /health HTTP/1.1\r\n")
            return s
        except OSError:
            return None

    while _until(stop):
        while len(socks) < n and _until(stop):
            s = one()
            if s is None:
                break
            socks.append(s)
            opened += 1
        alive = []
        for s in socks:
            try:
                s.send(b"X-Slow: 1\r\n")
                alive.append(s)
            except OSError:
                s.close()
        socks = alive
        time.sleep(1.0)
    for s in socks:
        s.close()
    return {"slow_http_opened": opened}


def fragment_flood(port: int, stop: float) -> dict[str, Any]:
    """Open a text message and send 1-byte continuations until closed; again and again."""
    closed: dict[int | None, int] = {}
    burst = frame(CONT, b"x", fin=False) * 512
    while _until(stop):
        try:
            sock = raw_handshake(port)
        except (OSError, AssertionError):
            time.sleep(0.05)
            continue
        got = b""
        try:
            sock.sendall(frame(TEXT, b"{", fin=False))
            while _until(stop):
                readable, writable, _ = select.select([sock], [sock], [], 0.2)
                if readable:
                    chunk = sock.recv(65536)
                    got += chunk
                    if not chunk or close_code(got) is not None:
                        break
                if writable:
                    sock.send(burst)
        except OSError:
            pass
        finally:
            sock.close()
        code = close_code(got)
        closed[code] = closed.get(code, 0) + 1
    return {"fragment_flood_closes": closed}


def huge_frames(port: int, stop: float, gap_s: float = 0.3) -> dict[str, Any]:
    """16 MiB ``batch`` frames of 316k items, one every ``gap_s``, each answered."""
    item = {"type": "step", "session": "s", "data": {"message": "x"}}
    whole = frame(TEXT, orjson.dumps({"type": "batch", "messages": [item] * ((16 * 1024 * 1024 - 64) // 54)}))
    answered, refused = 0, 0
    sock = raw_handshake(port)
    sock.settimeout(10)
    try:
        while _until(stop):
            sock.sendall(whole)
            reply = sock.recv(65536)
            if not reply:
                break
            answered += 1
            refused += b"more than" in reply
            time.sleep(gap_s)
    except OSError:
        pass
    finally:
        sock.close()
    return {"huge_frames_answered": answered, "huge_frames_refused": refused}


def ping_flood(port: int, stop: float) -> dict[str, Any]:
    """125-byte pings as fast as the server takes them, never reading a pong."""
    sock = raw_handshake(port)
    head = struct.pack("!BB", 0x80 | PING, 0x80 | 125) + b"\0\0\0\0"
    burst = b"".join(head + os.urandom(125) for _ in range(256))
    sock.setblocking(False)
    sent = 0
    try:
        while _until(stop):
            _, writable, _ = select.select([], [sock], [], 0.2)
            if writable:
                try:
                    sent += sock.send(burst)
                except BlockingIOError:
                    continue
    except OSError:
        pass
    finally:
        sock.close()
    return {"ping_flood_bytes": sent}


def _status(port: int, request: bytes) -> int:
    """Send one raw HTTP request; the status code of the reply (0: closed with none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        head = b""
        while b"\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                return 0
            head += chunk
    return int(head.split(b" ", 2)[1])


def cross_origin(port: int, stop: float) -> dict[str, Any]:
    """What a page of another origin sends: a WebSocket upgrade to ``/ws`` and no-cors POSTs
    to ``/sessions`` and ``/mcp``, each with that page's ``Origin``; counts the answers."""
    origin = "Origin: http://evil.example\r\n"
    upgrade = (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{origin}Upgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode()

    def post(path: str, body: bytes) -> bytes:
        return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{origin}Content-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body

    requests = [upgrade, post("/sessions", b"{}"),
                post("/mcp", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')]
    answers: dict[int, int] = {}
    while _until(stop):
        for request in requests:
            try:
                code = _status(port, request)
            except OSError:
                code = 0
            answers[code] = answers.get(code, 0) + 1
        time.sleep(0.02)
    return {"cross_origin_answers": answers}


ATTACKERS: list[Callable[..., dict[str, Any]]] = [
    slow_http, fragment_flood, huge_frames, ping_flood, cross_origin,
]


def attack(port: int, seconds: float, out: Any) -> None:
    """Every attacker at once for ``seconds``; what they did goes to ``out`` (a queue)."""
    stop = time.monotonic() + seconds
    results: dict[str, Any] = {}
    errors: list[str] = []

    def run(fn: Callable[..., dict[str, Any]]) -> None:
        try:
            for key, value in fn(port, stop).items():
                with contextlib.suppress(TypeError):
                    if key in results and isinstance(value, dict):
                        for k, v in value.items():
                            results[key][k] = results[key].get(k, 0) + v
                        continue
                results[key] = value
        except Exception as exc:  # reported to the test, not swallowed
            errors.append(f"{fn.__name__}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(fn,), daemon=True) for fn in ATTACKERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 30)
    out.put({"results": results, "errors": errors})
