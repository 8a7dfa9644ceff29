"""``FrameReader`` (``openenv/_wsframes.py``): the one frame reader of both ends.

Every test runs in both configurations: a client's (unmasked frames in) and a
server's (masked frames in). Well-formed frames are written by websockets' own
protocols (an independent implementation): its server side writes what a client
reads, its client side what a server reads. ``Recorder`` is a test double of an end:
it records what the reader hands to each hook. The last tests use the real ends: the
clients' ``Framer`` and the server's direct protocol on a live socket.
"""

from __future__ import annotations

import os
import random
import re
import struct
from typing import Any

import orjson
import pytest
from websockets.client import ClientProtocol
from websockets.protocol import Protocol, State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from openenv._wsframes import (
    BINARY,
    CLOSE,
    CONT,
    FRAGMENT_COST,
    MAX_FRAGMENTS,
    PING,
    PONG,
    TEXT,
    FrameReader,
    apply_mask,
)
from openenv.client._frames import Framer
from openenv.server._direct import _ServerFrames

from ._wire import call, connect, masked_frame, raw_handshake

ENDS = {"client": False, "server": True}  # the end reading -> whether its frames in are masked
SIZES = [0, 1, 125, 126, 65535, 65536, 200_000]


class Recorder(FrameReader):
    """Test double of one end: records every hook call; a close frame stops reading."""

    def __init__(self, masked: bool, max_size: int | None = None) -> None:
        super().__init__(masked=masked, max_size=max_size)
        self.messages: list[str | bytes] = []
        self.controls: list[tuple[int, bytes, bytes]] = []
        self.refused: tuple[int, str, bytes | None] | None = None
        self.rest: bytes | None = None

    def message(self, data: str | bytes) -> None:
        self.messages.append(data)

    def control(self, opcode: int, payload: bytes, frame: bytes) -> bool:
        self.controls.append((opcode, payload, frame))
        return opcode != CLOSE

    def refuse(self, code: int, why: str, rest: bytes | None) -> None:
        self.refused = (code, why, rest)

    def stop(self, rest: bytes) -> None:
        self.rest = rest


def writer(masked: bool) -> Protocol:
    """A websockets protocol, past its handshake, whose frames are ``masked`` or not."""
    client = ClientProtocol(parse_uri("ws://127.0.0.1/ws"), max_size=None)
    server = ServerProtocol(max_size=None)
    client.send_request(client.connect())
    server.receive_data(b"".join(client.data_to_send()))
    (request,) = server.events_received()
    server.send_response(server.accept(request))
    client.receive_data(b"".join(server.data_to_send()))
    client.events_received()
    assert client.state is State.OPEN
    assert server.state is State.OPEN
    return client if masked else server


def written(peer: Protocol) -> bytes:
    return b"".join(peer.data_to_send())


def raw(opcode: int, payload: bytes, *, masked: bool, fin: bool = True, rsv: int = 0) -> bytes:
    """One hand-made frame (for frames websockets would never write)."""
    n = len(payload)
    mask_bit = 0x80 if masked else 0
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    head += bytes([mask_bit | n]) if n < 126 else struct.pack("!BH", mask_bit | 126, n)
    if not masked:
        return head + payload
    mask = os.urandom(4)
    return head + mask + apply_mask(payload, mask)


def feed_in_pieces(reader: FrameReader, data: bytes, piece: int) -> None:
    for i in range(0, len(data), piece):
        reader.feed(data[i : i + piece])


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("piece", [1, 3, 1000, 10**9])
def test_messages_of_every_length_encoding_read_in_any_pieces(end: str, piece: int) -> None:
    peer, reader = writer(ENDS[end]), Recorder(ENDS[end])
    expected: list[str | bytes] = []
    for size in SIZES:
        text = "é" * (size // 2) + "x" * (size % 2)
        peer.send_text(text.encode())
        peer.send_binary(b"\x07" * size)
        expected += [text, b"\x07" * size]
    feed_in_pieces(reader, written(peer), piece)
    assert reader.messages == expected
    assert reader.refused is None
    assert not reader.stopped


@pytest.mark.parametrize("end", ENDS)
def test_fragments_are_joined_and_control_frames_between_them_handed_over(end: str) -> None:
    peer, reader = writer(ENDS[end]), Recorder(ENDS[end])
    peer.send_text(b"hel", fin=False)
    peer.send_ping(b"are you there")
    peer.send_continuation(b"lo ", fin=False)
    peer.send_continuation("wörld".encode(), fin=True)
    peer.send_binary(b"\x01", fin=False)
    peer.send_continuation(b"\x02", fin=True)
    peer.send_pong(b"")
    data = written(peer)
    feed_in_pieces(reader, data, 2)
    assert reader.messages == ["hello wörld", b"\x01\x02"]
    assert [(op, payload) for op, payload, _ in reader.controls] == [(PING, b"are you there"), (PONG, b"")]
    ping_frame = reader.controls[0][2]
    assert ping_frame in data  # the frame as it came (masked on a server), for websockets to answer
    assert bool(ping_frame[1] & 0x80) == ENDS[end]


@pytest.mark.parametrize("end", ENDS)
def test_a_control_hook_that_returns_false_stops_reading(end: str) -> None:
    peer, reader = writer(ENDS[end]), Recorder(ENDS[end])
    peer.send_text(b"before")
    peer.send_close(4000, "bye")
    after = raw(TEXT, b"after", masked=ENDS[end])
    reader.feed(written(peer) + after)
    assert reader.messages == ["before"]
    assert [op for op, _, _ in reader.controls] == [CLOSE]
    assert reader.stopped
    assert reader.rest == after  # what came after, for the end to drop or hand on
    reader.feed(raw(TEXT, b"later", masked=ENDS[end]))
    assert reader.messages == ["before"]


def protocol_errors(masked: bool) -> list[tuple[bytes, int, str]]:
    return [
        (raw(TEXT, b"x", masked=not masked), 1002, "masked frame"),
        (raw(TEXT, b"x", masked=masked, rsv=0x40), 1002, "reserved"),
        (raw(CONT, b"x", masked=masked), 1002, "continuation"),
        (raw(TEXT, b"a", masked=masked, fin=False) + raw(BINARY, b"b", masked=masked), 1002, "inside a"),
        (raw(0x3, b"", masked=masked), 1002, "opcode"),
        (raw(PING, b"x", masked=masked, fin=False), 1002, "control"),
        (raw(PING, b"x" * 126, masked=masked), 1002, "control"),
    ]


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("case", range(7))
def test_protocol_errors_are_refused_with_rfc_codes_and_the_bytes_from_there_on(end: str, case: int) -> None:
    masked = ENDS[end]
    bad, code, words = protocol_errors(masked)[case]
    good, after = raw(TEXT, b"ok", masked=masked), raw(TEXT, b"after", masked=masked)
    reader = Recorder(masked)
    reader.feed(good + bad + after)
    assert reader.messages == ["ok"]  # nothing is read past the error
    assert reader.refused is not None
    got_code, why, rest = reader.refused
    assert (got_code, words in why) == (code, True), why
    # the offending frame's own bytes on (a fragmented message's first part is already read)
    assert rest is not None
    assert rest.endswith(after)
    assert (bad + after).endswith(rest)
    assert reader.stopped


@pytest.mark.parametrize("end", ENDS)
def test_text_that_is_not_utf8_is_refused_with_1007(end: str) -> None:
    reader = Recorder(ENDS[end])
    reader.feed(raw(TEXT, b"\xff\xfe", masked=ENDS[end]) + raw(TEXT, b"after", masked=ENDS[end]))
    assert reader.refused is not None
    assert reader.refused[0] == 1007
    assert reader.refused[2] is None  # the message was already read
    assert reader.messages == []


@pytest.mark.parametrize("end", ENDS)
def test_a_frame_over_the_limit_is_refused_before_its_payload_arrives(end: str) -> None:
    masked = ENDS[end]
    reader = Recorder(masked, max_size=1000)
    reader.feed(raw(TEXT, b"x" * 1000, masked=masked))  # at the limit: read
    assert reader.messages == ["x" * 1000]
    over = raw(TEXT, b"x" * 1001, masked=masked)
    reader.feed(over[:4])  # the header alone
    assert reader.refused is not None
    assert reader.refused[0] == 1009
    assert "1000 bytes" in reader.refused[1]
    fragments = Recorder(masked, max_size=1000)
    fragments.feed(raw(TEXT, b"x" * 600, masked=masked, fin=False) + raw(CONT, b"x" * 600, masked=masked)[:4])
    assert fragments.refused is not None  # the limit is on the message, not each frame
    assert fragments.refused[0] == 1009


@pytest.mark.parametrize("end", ENDS)
def test_random_bytes_never_raise_out_of_the_reader(end: str) -> None:
    masked = ENDS[end]
    rng = random.Random(7)
    outcomes = {"refused": 0, "stopped": 0, "messages": 0, "controls": 0}
    kinds = [(TEXT, b"ok"), (PING, b"p"), (CLOSE, b"\x03\xe8")]
    pieces = [raw(op, body, masked=masked) for op, body in kinds]
    for _ in range(500):
        reader = Recorder(masked, max_size=1 << 16)
        data = b"".join(
            rng.choice([*pieces, rng.randbytes(rng.randint(1, 9))]) for _ in range(rng.randint(1, 6))
        )
        feed_in_pieces(reader, data, rng.randint(1, 8))
        if reader.refused is not None:
            outcomes["refused"] += 1
            assert reader.stopped
        elif reader.rest is not None:
            outcomes["stopped"] += 1
        outcomes["messages"] += len(reader.messages)
        outcomes["controls"] += len(reader.controls)
    assert all(outcomes.values()), outcomes  # every path was reached


# --- the real ends, configured as they run -----------------------------------------


def test_the_clients_framer_refuses_a_frame_over_its_limit() -> None:
    framer = Framer(1000)
    framer.feed(raw(TEXT, b"x" * 1001, masked=False)[:4])
    assert framer.error is not None
    assert "over this client's limit" in str(framer.error)
    assert "max_frame_bytes" in str(framer.error)
    peer = writer(masked=False)  # websockets' server reads the close frame the framer wrote
    assert isinstance(peer, ServerProtocol)
    peer.receive_data(b"".join(framer.pending))
    assert peer.close_rcvd is not None
    assert peer.close_rcvd.code == 1009


def test_the_servers_direct_protocol_refuses_a_frame_over_its_limit(serve, monkeypatch) -> None:
    refused: list[int] = []
    original = _ServerFrames.refuse

    def refuse(self: _ServerFrames, code: int, why: str, rest: bytes | None) -> None:
        refused.append(code)
        original(self, code, why, rest)

    monkeypatch.setattr(_ServerFrames, "refuse", refuse)
    server = serve(max_frame_bytes=2048)
    healthy = connect(server.ws_url)
    assert call(healthy, {"type": "reset"})["type"] == "observation"
    sock = raw_handshake(server.port)
    try:
        sock.sendall(masked_frame(b'{"type":"reset"}'))  # the direct channel is in force
        message: dict[str, Any] = {"type": "step", "data": {"message": "x" * 2100}}
        sock.sendall(masked_frame(orjson.dumps(message)))
        answer = b""
        sock.settimeout(5)
        try:
            while chunk := sock.recv(65536):  # the reset's reply, then a close frame
                answer += chunk
        except TimeoutError:
            pass  # no close came: the asserts below say what did
    finally:
        sock.close()
    assert refused == [1009]  # our reader refused it, before any byte of it reached the app
    assert re.search(rb"\x88[\x02-\x7d]\x03\xf1", answer)  # a close frame, code 1009
    assert b"xxxx" not in answer  # the step never ran
    assert call(healthy, {"type": "step", "data": {"message": "still"}})["type"] == "observation"
    healthy.close()


@pytest.mark.parametrize("end", ENDS)
def test_fragments_are_counted_by_number_and_charged_for_each(end: str) -> None:
    masked = ENDS[end]
    many = Recorder(masked, max_size=1 << 30)
    empty = raw(CONT, b"", masked=masked, fin=False)
    many.feed(raw(TEXT, b"{", masked=masked, fin=False) + empty * MAX_FRAGMENTS)
    assert many.refused is not None
    assert (many.refused[0], f"{MAX_FRAGMENTS} fragments" in many.refused[1]) == (1009, True)
    costly = Recorder(masked, max_size=10 * FRAGMENT_COST)
    costly.feed(raw(TEXT, b"", masked=masked, fin=False) + raw(CONT, b"", masked=masked, fin=False) * 11)
    assert costly.refused is not None  # eleven empty fragments cost more than ten times FRAGMENT_COST
    assert costly.refused[0] == 1009


@pytest.mark.parametrize("end", ENDS)
def test_pending_consumed_and_release(end: str) -> None:
    masked = ENDS[end]
    reader = Recorder(masked)
    whole = raw(TEXT, b"hello", masked=masked)
    reader.feed(whole)
    assert (reader.unfinished, reader.consumed, reader.fragment_started) == (False, len(whole), 0.0)
    reader.feed(raw(TEXT, b"he", masked=masked, fin=False))
    assert reader.unfinished
    assert reader.fragment_started > 0
    reader.feed(raw(CONT, b"llo", masked=masked)[:3])
    reader.release()
    assert (reader.unfinished, reader.stopped) == (False, True)
    assert reader.messages == ["hello"]
