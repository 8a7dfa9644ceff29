"""The direct channel between uvicorn's WebSocket protocol and the ``/ws`` loop (``_direct.py``).

Every socket test of the server runs over it (the ``serve`` fixture uses the production
uvicorn options); these cover what is its own: it is in force, a backlog past the
high-water mark pauses and resumes reading without losing or reordering a frame, bad
UTF-8 closes only its connection, and a connection that goes away ends its loop.
"""

from __future__ import annotations

import re

import orjson
import pytest

from openenv import EnvClient
from openenv.server import _direct
from openenv.server._direct import HIGH_WATER, DirectChannel

from .._envs import MODELS, TAction
from .._wire import call, connect, expect_closed, masked_frame, raw_handshake, recv


@pytest.fixture
def enabled(monkeypatch: pytest.MonkeyPatch) -> list[DirectChannel]:
    """The channels enabled while the test runs."""
    seen: list[DirectChannel] = []
    original = DirectChannel.enable

    def enable(self: DirectChannel) -> None:
        seen.append(self)
        original(self)

    monkeypatch.setattr(DirectChannel, "enable", enable)
    return seen


def test_socket_connections_take_the_direct_channel(serve, enabled) -> None:
    server = serve()
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        assert env.step(TAction(message="hi")).observation.step == 1
    assert len(enabled) == 1
    assert enabled[0].enabled


def test_a_backlog_past_the_high_water_mark_loses_and_reorders_nothing(
    serve, enabled, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a threaded env on a plain connection answers one frame at a time, so frames sent
    # all at once pile up in the inbox while each step hops to a thread
    server = serve()
    paused: list[int] = []
    original = DirectChannel.deliver

    def deliver(self: DirectChannel, data: str | bytes) -> None:
        original(self, data)
        if self._p.read_paused:
            paused.append(len(self._inbox))

    monkeypatch.setattr(DirectChannel, "deliver", deliver)
    n = HIGH_WATER * 4
    ws = connect(server.ws_url)
    try:
        call(ws, {"type": "reset"})
        for i in range(n):
            ws.send(orjson.dumps({"type": "step", "data": {"message": str(i)}}).decode())
        replies = [recv(ws) for _ in range(n)]
        protocol = enabled[0]._p  # released (None) once the socket is gone
    finally:
        ws.close()
    assert [r["data"]["observation"]["step"] for r in replies] == list(range(1, n + 1))
    assert [r["data"]["observation"]["message"] for r in replies] == [str(i) for i in range(n)]
    assert paused, "the inbox never reached the high-water mark: the test did not test it"
    assert max(paused) >= HIGH_WATER
    assert not protocol.read_paused  # resumed once drained


def test_invalid_utf8_text_closes_only_that_connection(serve) -> None:
    server = serve()
    other = connect(server.ws_url)
    assert call(other, {"type": "reset"})["type"] == "observation"
    bad = connect(server.ws_url)
    assert call(bad, {"type": "reset"})["type"] == "observation"
    bad.send(b"\xff\xfe not utf-8", text=True)
    assert expect_closed(bad) == 1007
    reply = call(other, {"type": "step", "data": {"message": "still here"}})
    assert reply["data"]["observation"]["step"] == 1
    other.close()
    server.wait_active(0)


def test_a_peer_that_goes_away_ends_its_loop_and_session(serve, enabled) -> None:
    server = serve()
    ws = connect(server.ws_url)
    assert call(ws, {"type": "reset"})["type"] == "observation"
    server.wait_active(1)
    ws.socket.close()  # no close frame: the peer just goes away
    server.wait_active(0)
    assert enabled[0].closed


def test_protocol_class_falls_back_when_uvicorn_internals_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _direct.protocol_class() is _direct.DirectWebSocketsProtocol
    monkeypatch.setattr(_direct, "_NEEDED", ("handle_connect", "a_method_uvicorn_does_not_have"))
    assert _direct.protocol_class() is None


# --- the server's own framing of data frames (control frames go to websockets) -----


def read_frame(sock) -> tuple[int, bytes]:
    """One unmasked server frame from a bare socket: (opcode, payload)."""

    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            assert chunk, "the server closed the socket"
            out += chunk
        return out

    b0, b1 = exactly(2)
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(exactly(2), "big")
    elif n == 127:
        n = int.from_bytes(exactly(8), "big")
    return b0 & 0x0F, exactly(n)


def part(payload: bytes, opcode: int, fin: bool) -> bytes:
    frame = bytearray(masked_frame(payload, opcode))
    if not fin:
        frame[0] &= 0x7F
    return bytes(frame)


STEP_BYTES = orjson.dumps({"type": "step", "data": {"message": "fragmented ✓"}})


@pytest.mark.parametrize("piece", [1, 7, 10**6])
def test_fragments_pings_and_split_reads_assemble_to_one_message(serve, enabled, piece: int) -> None:
    server = serve()
    sock = raw_handshake(server.port)
    try:
        sock.sendall(masked_frame(b'{"type":"reset"}'))
        assert orjson.loads(read_frame(sock)[1])["type"] == "observation"
        data = (
            part(STEP_BYTES[:5], 0x1, fin=False)
            + masked_frame(b"ping!", 0x9)  # a control frame between fragments
            + part(STEP_BYTES[5:9], 0x0, fin=False)
            + part(STEP_BYTES[9:], 0x0, fin=True)
        )
        for i in range(0, len(data), piece):  # bytes arrive in pieces of any size
            sock.sendall(data[i : i + piece])
        frames = [read_frame(sock), read_frame(sock)]
    finally:
        sock.close()
    assert (0xA, b"ping!") in frames  # websockets answered the ping
    (reply,) = [orjson.loads(p) for op, p in frames if op == 0x1]
    assert reply["data"]["observation"]["message"] == "fragmented ✓"
    assert enabled[0].enabled


def test_an_unmasked_client_frame_is_a_protocol_error(serve) -> None:
    server = serve()
    sock = raw_handshake(server.port)
    try:
        sock.sendall(masked_frame(b'{"type":"reset"}'))
        read_frame(sock)
        sock.sendall(bytes([0x81, 2]) + b"{}")  # no mask bit
        opcode, payload = read_frame(sock)
    finally:
        sock.close()
    assert opcode == 0x8
    assert int.from_bytes(payload[:2], "big") == 1002
    server.wait_active(0)


def test_a_close_frame_is_answered_and_ends_the_session(serve) -> None:
    server = serve()
    sock = raw_handshake(server.port)
    try:
        sock.sendall(masked_frame(b'{"type":"reset"}'))
        read_frame(sock)
        sock.sendall(masked_frame((4000).to_bytes(2, "big") + b"bye", 0x8))
        opcode, payload = read_frame(sock)
    finally:
        sock.close()
    assert opcode == 0x8
    assert int.from_bytes(payload[:2], "big") == 4000
    server.wait_active(0)


def test_frames_that_arrive_before_the_channel_takes_over(serve, monkeypatch) -> None:
    # websockets may be mid-frame on bytes it got before enable(): such a connection
    # stays with websockets' parser, and what it queued is answered in order
    original = DirectChannel.enable
    seen: list[_direct.DirectWebSocketsProtocol] = []

    def early_frame(self: DirectChannel) -> None:
        seen.append(self._p)
        self._p.data_received(masked_frame(b'{"type":"reset"}'))  # as if it came first
        original(self)

    monkeypatch.setattr(DirectChannel, "enable", early_frame)
    server = serve()
    sock = raw_handshake(server.port)
    try:
        first = orjson.loads(read_frame(sock)[1])
        sock.sendall(masked_frame(STEP_BYTES))
        second = orjson.loads(read_frame(sock)[1])
    finally:
        sock.close()
    assert first["data"]["observation"]["step"] == 0  # the early reset, answered
    assert second["data"]["observation"]["message"] == "fragmented ✓"
    assert seen[0].general


def random_frames(rng, n: int) -> bytes:
    """A stream of frames, most well formed, some not: any opcode, fin and RSV bits,
    masked or not, lengths in all three encodings, payloads of JSON or noise."""
    out = bytearray(masked_frame(b'{"type":"reset"}') if rng.random() < 0.5 else b"")
    for _ in range(n):
        kind = rng.random()
        if kind < 0.1:
            out += rng.randbytes(rng.randint(1, 40))  # noise
            continue
        opcode = rng.choice([0x0, 0x1, 0x1, 0x2, 0x3, 0x8, 0x9, 0xA, 0xB])
        payload = rng.choice(
            [b'{"type":"reset"}', b'{"type":"step","data":{"message":"x"}}', b"\xff\xfe", b""]
        ) + rng.randbytes(rng.choice([0, 3, 130, 70_000]))
        frame = bytearray(masked_frame(payload, opcode))
        if rng.random() < 0.2:
            frame[0] &= 0x7F  # not final
        if rng.random() < 0.05:
            frame[0] |= rng.choice([0x10, 0x20, 0x40])  # reserved bits
        if rng.random() < 0.05:
            frame[1] &= 0x7F  # claims no mask (the mask bytes stay in the payload)
        if rng.random() < 0.05:
            frame = frame[: rng.randint(1, len(frame))]  # cut short
        out += frame
    return bytes(out)


def test_random_frame_streams_never_hurt_the_server_or_other_sessions(serve) -> None:
    import random
    import time

    rng = random.Random(20261123)
    server = serve(max_frame_bytes=100_000)
    healthy = connect(server.ws_url)
    assert call(healthy, {"type": "reset"})["type"] == "observation"
    deadline = time.monotonic() + 30
    answers = bytearray()
    for i in range(60):
        if time.monotonic() > deadline:
            break
        sock = raw_handshake(server.port)
        data = random_frames(rng, rng.randint(1, 12))
        try:
            for start in range(0, len(data), 4096):
                sock.sendall(data[start : start + 4096])
            sock.settimeout(0.2)
            try:
                while chunk := sock.recv(65536):  # what it answers, until it closes or goes quiet
                    answers += chunk
            except (TimeoutError, OSError):
                pass
        except OSError:
            pass  # the server closed on a protocol error while we were still sending
        finally:
            sock.close()
        step = call(healthy, {"type": "step", "data": {"message": f"after {i}"}})
        assert step["data"]["observation"]["message"] == f"after {i}"
    healthy.close()
    server.wait_active(0, timeout_s=10)
    # the streams reached every path: replies, typed errors, protocol-error closes
    assert b'"type":"observation"' in answers
    assert b'"type":"error"' in answers
    assert re.search(rb"\x88[\x02-\x7d]\x03\xea", answers)  # a close frame, code 1002
    assert re.search(rb"\x88[\x02-\x7d]\x03\xef", answers)  # 1007 (bad UTF-8)


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 200_000])
def test_server_frames_parse_in_websockets_client_protocol(size: int) -> None:
    from websockets.client import ClientProtocol
    from websockets.frames import Opcode
    from websockets.server import ServerProtocol
    from websockets.uri import parse_uri

    client, server = ClientProtocol(parse_uri("ws://127.0.0.1/ws"), max_size=None), ServerProtocol()
    client.send_request(client.connect())
    server.receive_data(b"".join(client.data_to_send()))
    (request,) = server.events_received()
    server.send_response(server.accept(request))
    client.receive_data(b"".join(server.data_to_send()))
    client.events_received()  # the 101
    text = "é" * (size // 2) + "x" * (size % 2)
    client.receive_data(_direct.server_frame(text) + _direct.server_frame(b"\x00" * size))
    frames = client.events_received()
    assert [(f.opcode, f.fin) for f in frames] == [(Opcode.TEXT, True), (Opcode.BINARY, True)]
    assert frames[0].data.decode() == text
    assert frames[1].data == b"\x00" * size
    assert client.parser_exc is None
