"""The WebSocket reader's limits on a real server (issue 34): fragments counted by
number and bytes, an unfinished message bounded in time, protocol errors failed with
their RFC 6455 code, buffers freed when the socket goes."""

from __future__ import annotations

import gc
import select
import socket
import threading
import time
import weakref

import orjson
import pytest

from openenv.server import _direct
from openenv.server._direct import DirectWebSocketsProtocol

from .._quiet import quiet_host
from .._wire import call, connect, raw_handshake
from ..conftest import wait_until
from . import _chaos_net
from ._net import CONT, TEXT, close_code, cpu_s, frame, read_until_closed, rss_kib, served, server_frames

__all__ = ["served"]  # the fixture, used by name


def test_a_new_text_frame_inside_a_fragmented_message_fails_with_1002(server) -> None:
    sock = raw_handshake(server.port)
    try:
        sock.sendall(frame(TEXT, b'{"type":', fin=False) + frame(TEXT, b'{"type":"reset"}'))
        data = read_until_closed(sock)
    finally:
        sock.close()
    assert close_code(data) == 1002, data
    # the second frame was not read as a message
    assert not [p for op, p in server_frames(data) if op == TEXT]


def test_a_continuation_frame_outside_a_message_fails_with_1002(server) -> None:
    sock = raw_handshake(server.port)
    try:
        sock.sendall(frame(TEXT, b'{"type":"reset"}') + frame(CONT, b"x"))
        data = read_until_closed(sock)
    finally:
        sock.close()
    assert close_code(data) == 1002


def _flood(sock: socket.socket, piece: bytes, budget_s: float) -> tuple[int, bytes, bool]:
    """Send ``piece`` over and over until the server closes (or ``budget_s``); returns
    the pieces sent, what the server sent back, and whether the connection was reset (the
    server closed it while our data was still arriving: Linux then drops what it had
    received, the close frame included). A piece cut by a full socket buffer
    is finished before the next one starts (a frame cut and restarted desynchronises the
    stream: the server then reads a header as a payload length and waits; seen once in CI)."""
    sent, got, reset = 0, b"", False
    pending = memoryview(piece)
    deadline = time.monotonic() + budget_s
    sock.setblocking(False)
    while time.monotonic() < deadline:
        readable, writable, _ = select.select([sock], [sock], [], 0.5)
        if readable:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk, reset = b"", True
            except BlockingIOError:
                chunk = b""
            got += chunk
            if not chunk or close_code(got) is not None:
                break
        if writable:
            try:
                pending = pending[sock.send(pending):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                reset = True
                break
            if not pending:
                sent, pending = sent + 1, memoryview(piece)
    sock.setblocking(True)
    return sent, got, reset


@pytest.mark.timeout(90)
def test_endless_empty_and_one_byte_continuation_frames_are_refused_and_memory_returns(served) -> None:
    server = served()
    with connect(server.ws_url) as ws:  # warm the server up before the baseline
        call(ws, {"type": "reset"})
    before = rss_kib(server.pid)
    for body in (b"", b"x"):
        sock = raw_handshake(server.port)
        started = time.monotonic()
        try:
            sock.sendall(frame(TEXT, b"{", fin=False))
            sent, got, reset = _flood(sock, frame(CONT, body, fin=False) * 1000, budget_s=20)
        finally:
            sock.close()
        # closed with 1009, or reset by the server's close while the flood still came in
        # (its close frame dropped with the reset: seen once in CI)
        assert close_code(got) == 1009 or (reset and not got), (
            f"not closed after {sent * 1000} fragments of {len(body)} byte(s)"
        )
        # at the cap (MAX_FRAGMENTS), not after the flood filled max_frame_bytes
        assert time.monotonic() - started < 10
    time.sleep(0.5)
    after = rss_kib(server.pid)
    assert after <= before * 1.1 + 2048, (before, after)
    with connect(server.ws_url) as ws:  # the server is fine
        assert call(ws, {"type": "reset"})["type"] == "observation"


def test_a_fragmented_message_of_many_tiny_fragments_is_charged_for_each(serve) -> None:
    server = serve(max_frame_bytes=64 * 1024)  # 64 KiB: 1,025 fragments of 0 bytes cost over it
    sock = raw_handshake(server.port)
    try:
        sock.sendall(frame(TEXT, b"{", fin=False) + frame(CONT, b"", fin=False) * 1100)
        data = read_until_closed(sock)
    finally:
        sock.close()
    assert close_code(data) == 1009


def test_a_legitimately_fragmented_message_is_read(server) -> None:
    sock = raw_handshake(server.port)
    try:
        body = b'{"type":"reset"}'
        parts = [frame(TEXT, body[:1], fin=False)]
        parts += [frame(CONT, bytes([c]), fin=False) for c in body[1:-1]]
        parts.append(frame(CONT, body[-1:]))
        sock.sendall(b"".join(parts))
        sock.settimeout(10)
        data = sock.recv(65536)
    finally:
        sock.close()
    assert b'"observation"' in data


def _dribble(sock: socket.socket, first: bytes, pieces: list[bytes], every_s: float) -> bytes:
    """Send ``first``, then each piece after a pause, while the server lets us; then
    read what it sent until it closed."""
    sock.sendall(first)
    for piece in pieces:
        time.sleep(every_s)
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            break
    return read_until_closed(sock, timeout_s=5)


@pytest.mark.parametrize("how", ["fragments", "one frame trickling"])
def test_an_unfinished_message_is_closed_with_1008_after_message_timeout_s(serve, how: str) -> None:
    server = serve(message_timeout_s=0.5)
    healthy = connect(server.ws_url)
    try:
        call(healthy, {"type": "reset"})
        sock = raw_handshake(server.port)
        try:
            if how == "fragments":  # fragments keep coming, the message never ends
                first, pieces = frame(TEXT, b'{"type":', fin=False), [frame(CONT, b" ", fin=False)] * 6
            else:  # a frame's header, then its payload a byte at a time, never all of it
                whole = frame(TEXT, b'{"type":"reset"}' + b" " * 100)
                first, pieces = whole[:8], [whole[i : i + 1] for i in range(8, 14)]
            started = time.monotonic()
            data = _dribble(sock, first, pieces, every_s=0.2)
        finally:
            sock.close()
        assert close_code(data) == 1008, data
        assert time.monotonic() - started < 4
        assert call(healthy, {"type": "step", "data": {"message": "ok"}})["type"] == "observation"
    finally:
        healthy.close()


def test_a_closed_connection_leaves_no_cycle_behind(server) -> None:
    """The protocol, its reader and channel go by reference counting alone."""
    protocols: list[weakref.ref[DirectWebSocketsProtocol]] = []
    gc.collect()
    gc.disable()
    try:
        ws = connect(server.ws_url)
        call(ws, {"type": "reset"})
        protocols = [
            weakref.ref(p) for p in server.server.server_state.connections
            if isinstance(p, DirectWebSocketsProtocol)
        ]
        assert protocols
        ws.close()
        deadline = time.monotonic() + 5
        while any(r() is not None for r in protocols) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(r() is None for r in protocols), "a protocol outlived its socket (held by a cycle)"
    finally:
        gc.enable()


# --- decoding bounded on the loop -----------------------------------------------------


def _attack(port: int, payload: bytes, frames: int, gap_s: float, answers: list[tuple[float, bytes]],
            done: threading.Event) -> None:
    """Send ``frames`` copies of one big text frame, ``gap_s`` apart, reading the reply
    to each; ``answers`` gets (seconds from the frame's last byte to its reply, reply)."""
    sock = raw_handshake(port)
    try:
        sock.settimeout(30)
        whole = frame(TEXT, payload)
        for _ in range(frames):
            time.sleep(gap_s)
            sock.sendall(whole)
            sent = time.monotonic()
            got = sock.recv(65536)
            if not got:
                break
            answers.append((time.monotonic() - sent, got))
    finally:
        sock.close()
        done.set()


def _victim_latencies(url: str, done: threading.Event, budget_s: float) -> list[float]:
    """Step one session over and over while ``done`` is unset; each step's round trip."""
    took: list[float] = []
    with connect(url) as ws:
        call(ws, {"type": "reset"})
        deadline = time.monotonic() + budget_s
        while not done.is_set() and time.monotonic() < deadline:
            started = time.perf_counter()
            call(ws, {"type": "step", "data": {"message": "hi"}})
            took.append(time.perf_counter() - started)
    return took


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@pytest.mark.timeout(120)
def test_a_16_mib_batch_frame_is_refused_quickly_while_another_client_steps(served) -> None:
    server = served()
    item = {"type": "step", "session": "s", "data": {"message": "x"}}
    body = orjson.dumps({"type": "batch", "messages": [item] * ((16 * 1024 * 1024 - 64) // 54)})
    assert 15 * 1024 * 1024 < len(body) <= 16 * 1024 * 1024  # 316k items
    answers: list[tuple[float, bytes]] = []
    done = threading.Event()
    quiet, load = quiet_host()
    cpu_before = cpu_s(server.pid)
    attacker = threading.Thread(target=_attack, args=(server.port, body, 8, 0.25, answers, done), daemon=True)
    attacker.start()
    took = _victim_latencies(server.ws_url, done, budget_s=60)
    attacker.join(30)
    cpu = cpu_s(server.pid) - cpu_before
    assert len(answers) == 8, "the attacker's frames were not all answered"
    refusals = sorted(t for t, _ in answers)
    print(f"refused in {refusals[0] * 1000:.0f}-{refusals[-1] * 1000:.0f} ms; victim: {len(took)} steps, "
          f"p50 {sorted(took)[len(took) // 2] * 1000:.2f} ms, p99 {p99(took) * 1000:.2f} ms, "
          f"max {max(took) * 1000:.2f} ms; server CPU {cpu:.2f} s; {load}")
    # Load cannot inflate CPU seconds: before the bound each frame's parse took 1.5-1.8 s
    # of the server's CPU (on its loop), 11.4 s for the 8 at load 13; now about 0.05 s each. A victim's
    # step costs the server about 0.07 ms of CPU (0.15 ms allowed).
    frames_cpu = cpu - len(took) * 0.00015
    assert frames_cpu <= 8 * 0.3, f"the server spent {cpu:.1f} s of CPU ({len(took)} victim steps)"
    if quiet:  # latency on a quiet host only (tests/_quiet.py); the CPU bound above holds on any
        assert refusals[-1] < 1.0  # from the frame's last byte sent to its error reply
        assert p99(took) <= 0.050, f"victim p99 {p99(took) * 1000:.1f} ms"
        # Before the bound each frame held the loop 1.5-1.8 s; 1 s leaves page faults their
        # margin (a loaded machine's first-touch page faults of 16 MiB reached 327 ms).
        assert max(took) <= 1.0, f"victim max {max(took) * 1000:.1f} ms"
    assert all(b"more than" in r and b"VALIDATION_ERROR" in r for _, r in answers), answers[:1]


@pytest.mark.timeout(90)
def test_a_ping_flood_that_never_reads_its_pongs_is_not_buffered(served) -> None:
    """Pongs wait in the write buffer of a peer that does not read: reading it stops too."""
    server = served()
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
    before = rss_kib(server.pid)
    stop = time.monotonic() + 6
    sent = _chaos_net.ping_flood(server.port, stop)["ping_flood_bytes"]
    time.sleep(0.2)
    during = rss_kib(server.pid)
    assert sent > 0
    grew = (during - before) // 1024
    assert grew < 16, f"RSS grew {grew} MiB for {sent >> 20} MiB of pings"


def test_unfinished_messages_of_all_connections_share_one_budget(serve, monkeypatch) -> None:
    """Many connections each holding most of a large frame cannot add up past the budget."""
    monkeypatch.setattr(DirectWebSocketsProtocol, "unfinished_budget", 1024 * 1024)
    server = serve()
    body = orjson.dumps({"type": "step", "data": {"message": "x" * 700_000}})
    first, second = raw_handshake(server.port), raw_handshake(server.port)
    try:
        for sock in (first, second):
            sock.sendall(frame(TEXT, b'{"type":"reset"}'))
            sock.settimeout(10)
            assert b"observation" in sock.recv(65536)
        whole = frame(TEXT, body)
        base = _direct._HELD[0]
        first.sendall(whole[:600_000])  # 600 KB held
        held = lambda: _direct._HELD[0] - base >= 590_000  # noqa: E731
        wait_until(held, timeout_s=30, what="the server to hold the first's 600 KB")
        second.sendall(whole[:600_000])  # 600 KB more: over 1 MiB in all
        assert close_code(read_until_closed(second, timeout_s=5)) == 1008
        first.sendall(whole[600_000:])  # the first finishes its message and is answered
        got = b""
        while b"observation" not in got:
            chunk = first.recv(1 << 20)
            assert chunk, "the first connection was closed"
            got += chunk
    finally:
        first.close()
        second.close()
