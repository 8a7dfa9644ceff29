"""Slow and idle clients cannot hold the server (issue 34): a header deadline on every
request, sessionless WebSockets reaped, a cap on connections per client, and /health
answering under a flood of 1,100 slow clients."""

from __future__ import annotations

import contextlib
import resource
import socket
import time

import httpx
import pytest

from openenv.server._guard import SPARE, ConnectionGuard

from .._wire import call, connect, expect_closed, raw_handshake
from ..conftest import wait_until
from ._idle_clock import idle_clock
from ._net import raise_nofile, read_until_closed, served

__all__ = ["idle_clock", "served"]  # the fixtures, used by name


def _closed_within(sock: socket.socket, timeout_s: float) -> float | None:
    """Seconds until the server closed ``sock`` (None: still open after ``timeout_s``)."""
    started = time.monotonic()
    read_until_closed(sock, timeout_s)
    took = time.monotonic() - started
    return took if took < timeout_s else None


@pytest.mark.parametrize("sent", [b"", b"GET /health HTTP/1.1\r\nHost: x\r\n"], ids=["silent", "half a head"])
def test_a_request_head_not_finished_in_header_timeout_s_is_closed(serve, sent: bytes) -> None:
    server = serve(header_timeout_s=0.5)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        sock.sendall(sent)
        took = _closed_within(sock, 5)
    finally:
        sock.close()
    assert took is not None, "the server kept a socket whose request head never ended"
    assert httpx.get(f"{server.url}/health", timeout=5).status_code == 200


def _health_on(sock: socket.socket) -> bytes:
    """One ``GET /health`` on a kept-alive socket; its response's head and body."""
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + _length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break  # closed by the server
        data += chunk
    return data


def _length(data: bytes) -> int:
    head = data.split(b"\r\n\r\n", 1)[0].lower()
    return int(head.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0]) if b"content-length:" in head else 0


def test_the_header_deadline_starts_again_after_each_response(serve) -> None:
    """Six requests 0.3 s apart on one socket (a bare one: a client library would open a
    new connection unseen): 1.8 s in all, past the 1.5 s deadline had it run from the
    first; each gap leaves the host 1.2 s of margin."""
    server = serve(header_timeout_s=1.5)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        for i in range(6):
            if i:
                time.sleep(0.3)
            answer = _health_on(sock)
            assert answer.startswith(b"HTTP/1.1 200"), (i, answer[:200])


def test_a_websocket_with_no_session_is_reaped_after_idle_timeout_s(serve) -> None:
    server = serve(idle_timeout_s=0.5)
    ws = connect(server.ws_url, extended=True)  # openenv.v1: no session until a reset
    started = time.monotonic()
    assert expect_closed(ws, timeout_s=10) == 4408
    assert time.monotonic() - started < 8

def test_a_websocket_whose_session_is_in_use_is_not_reaped(serve, idle_clock) -> None:
    """Quiet time on the idle clock (moved by the test): steps 0.3 s apart, past the 0.5 s
    in all, a reaper pass after each gap; the session never idle, the socket is the session's."""
    server = serve(idle_timeout_s=0.5)
    idle_clock.watch(server.manager)
    with connect(server.ws_url, extended=True) as busy:
        call(busy, {"type": "reset", "id": 1})
        for i in range(3):
            idle_clock.advance(0.3)
            idle_clock.settle()
            step = {"type": "step", "id": 2 + i, "data": {"message": "x"}}
            assert call(busy, step)["type"] == "observation"
        idle_clock.advance(0.6)  # then quiet past the timeout: the session goes, the socket with it
        assert expect_closed(busy, timeout_s=10) == 4408


def test_past_its_cap_a_client_may_only_ask_for_health(serve) -> None:
    server = serve(max_connections_per_client=4, header_timeout_s=30)
    held = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(4)]
    try:
        with httpx.Client(base_url=server.url, timeout=5) as http:
            assert http.get("/health").status_code == 200  # the fifth: /health only
            refused = http.get("/sessions")
            assert refused.status_code == 503
            assert b"too many connections" in refused.content
        with pytest.raises(Exception, match="503"):
            raw_handshake(server.port)  # a WebSocket handshake too
        extra = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(SPARE + 2)]
        try:
            gone = sum(_closed_within(s, 1.0) is not None for s in extra)
        finally:
            for s in extra:
                s.close()
        assert gone >= 2  # past the cap and its spare: closed at once
    finally:
        for s in held:
            s.close()

    def reset_ok() -> bool:
        with contextlib.suppress(Exception), connect(server.ws_url) as ws:
            return bool(call(ws, {"type": "reset"})["type"] == "observation")
        return False

    wait_until(reset_ok, timeout_s=30, what="the closed sockets' places to be given back")


def test_the_guard_counts_by_peer_and_keeps_room_below_the_files_limit() -> None:
    guard = ConnectionGuard(max_per_client=10_000, header_timeout_s=1, files=1024)
    assert guard.max_per_client == (1024 - 64) // 2
    assert [guard.admit("a") for _ in range(guard.max_per_client)] == ["ok"] * guard.max_per_client
    assert [guard.admit("a") for _ in range(SPARE)] == ["limited"] * SPARE
    assert guard.admit("a") == "refused"
    assert guard.admit("b") == "ok"
    for _ in range(guard.max_per_client + SPARE):
        guard.release("a")
    guard.release("b")
    assert (guard.open, guard.total) == ({}, 0)


FLOOD = 1100


def _slow_clients(port: int, n: int) -> list[socket.socket]:
    """``n`` connections from 127.0.0.2, each having sent the first line of a request."""
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=("127.0.0.2", 0))
            s.sendall(b"GET /health HTTP/1.1\r\n")
        except OSError:
            continue  # refused at once: counted by the server, not held
        socks.append(s)
    return socks


def _trickle(socks: list[socket.socket]) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.send(b"X-Slow: 1\r\n")


@pytest.mark.timeout(120)
def test_health_answers_while_1100_slow_clients_hold_connections(served) -> None:
    if raise_nofile(FLOOD + 400) < FLOOD + 200:
        pytest.skip(f"this process may open only {resource.getrlimit(resource.RLIMIT_NOFILE)} files")
    server = served(nofile=1024)  # the server's soft and hard open-files limit: a common default
    socks = _slow_clients(server.port, FLOOD)
    failures, answered = [], 0
    try:
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            _trickle(socks)  # a header line every ~2 s from each
            for _ in range(4):
                started = time.monotonic()
                try:
                    status = httpx.get(f"{server.url}/health", timeout=3).status_code
                    answered += status == 200
                    if status != 200:
                        failures.append(f"{status}")
                except httpx.HTTPError as exc:
                    failures.append(f"{type(exc).__name__} after {time.monotonic() - started:.1f} s")
                time.sleep(0.5)
        with connect(server.ws_url) as ws:  # and a client elsewhere can still work
            assert call(ws, {"type": "reset"})["type"] == "observation"
    finally:
        for s in socks:
            s.close()
    assert not failures, f"/health failed {len(failures)} times ({answered} answered): {failures[:3]}"
    assert answered >= 10


def _post_head(port: int, length: int) -> bytes:
    return (f"POST /reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def test_a_request_body_that_stalls_is_closed(serve) -> None:
    """A body with no byte for a whole period (1 s) is closed; one that comes 0.15 s a
    piece is not, though it takes 1.35 s in all (0.85 s of margin a gap for the host)."""
    server = serve(header_timeout_s=1.0)
    body = b'{"seed": 1}' + b" " * 89
    stalled = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    slow = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        stalled.sendall(_post_head(server.port, len(body)) + body[:10])  # then nothing
        slow.sendall(_post_head(server.port, len(body)) + body[:10])
        for i in range(10, len(body), 10):  # a piece every 0.15 s: slow, never stalled
            time.sleep(0.15)
            slow.sendall(body[i : i + 10])
        slow.settimeout(10)
        assert slow.recv(65536).startswith(b"HTTP/1.1 200")
        assert _closed_within(stalled, 10) is not None, "a stalled body kept its connection"
    finally:
        stalled.close()
        slow.close()
