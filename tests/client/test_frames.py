"""``Framer``: the clients' RFC 6455 framing, checked against websockets' own server protocol.

websockets' ``ServerProtocol`` (a complete, independent implementation) is the peer:
it parses every frame the ``Framer`` writes, and writes every frame the ``Framer`` reads.
Reading frames (lengths, pieces, fragments, protocol errors, the limit) is
``FrameReader``'s, tested in ``tests/test_wsframes.py`` for both ends; here is what the
``Framer`` adds: frames out, pings answered, closes answered, errors sent as close codes.
"""

from __future__ import annotations

import struct

import pytest
from websockets.client import ClientProtocol
from websockets.frames import Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from openenv import ConnectionClosed
from openenv.client._frames import Framer, not_a_101, split_handshake

pytestmark = pytest.mark.socket_only  # no client transport involved: run once

SIZES = [0, 1, 125, 126, 65535, 65536, 200_000]


def server() -> ServerProtocol:
    """websockets' server side, past a handshake with websockets' client side."""
    peer, client = ServerProtocol(max_size=None), ClientProtocol(parse_uri("ws://127.0.0.1/ws"))
    client.send_request(client.connect())
    peer.receive_data(b"".join(client.data_to_send()))
    (request,) = peer.events_received()
    peer.send_response(peer.accept(request))
    peer.data_to_send()
    assert peer.state is State.OPEN
    return peer


def server_bytes(peer: ServerProtocol) -> bytes:
    return b"".join(peer.data_to_send())


def feed_in_pieces(framer: Framer, data: bytes, piece: int) -> None:
    for i in range(0, len(data), piece):
        framer.feed(data[i : i + piece])


@pytest.mark.parametrize("size", SIZES)
def test_frames_written_parse_as_the_same_messages(size: int) -> None:
    peer, framer = server(), Framer(None)
    text = "é" * (size // 2) + "x" * (size % 2)
    peer.receive_data(framer.text(text) + framer.binary(bytes(range(256)) * (size // 256)))
    got = peer.events_received()
    assert [f.opcode for f in got] == [Opcode.TEXT, Opcode.BINARY]
    assert got[0].data.decode() == text
    assert got[1].data == bytes(range(256)) * (size // 256)
    assert peer.parser_exc is None  # masked, as a server requires


def test_a_ping_between_fragments_is_answered_with_its_payload() -> None:
    peer, framer = server(), Framer(None)
    peer.send_text(b"a", fin=False)
    peer.send_ping(b"are you there")
    peer.send_continuation(b"b", fin=True)
    framer.feed(server_bytes(peer))
    assert list(framer.messages) == ["ab"]
    peer.receive_data(b"".join(framer.pending))
    pongs = peer.events_received()
    assert [(f.opcode, f.data) for f in pongs] == [(Opcode.PONG, b"are you there")]


def test_a_close_frame_is_reported_and_answered_with_its_code() -> None:
    peer, framer = server(), Framer(None)
    peer.send_text(b"last")
    peer.send_close(4408, "idle")
    framer.feed(server_bytes(peer))
    assert list(framer.messages) == ["last"]
    assert framer.close_rcvd == (4408, "idle")
    assert not framer.open
    peer.receive_data(b"".join(framer.pending))
    assert peer.close_rcvd is not None
    assert peer.close_rcvd.code == 4408
    assert framer.close() == b""  # one close frame per connection


def test_an_empty_close_and_eof() -> None:
    framer = Framer(None)
    framer.feed(bytes([0x88, 0]))
    assert framer.close_rcvd == (None, "")
    other = Framer(None)
    other.eof()
    assert other.close_rcvd == (None, "")
    assert not other.open


def raw(opcode: int, payload: bytes, fin: bool = True, masked: bool = False, rsv: int = 0) -> bytes:
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    n = len(payload)
    mask_bit = 0x80 if masked else 0
    if n < 126:
        head += bytes([mask_bit | n])
    else:
        head += struct.pack("!BH", mask_bit | 126, n)
    return head + (b"\x00\x00\x00\x00" if masked else b"") + payload


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        (raw(0x1, b"x", masked=True), 1002, "masked"),
        (raw(0x3, b""), 1002, "opcode"),
        (raw(0x8, b"\x03"), 1002, "1-byte"),
        (raw(0x1, b"\xff\xfe"), 1007, "UTF-8"),
        (raw(0x8, b"\x03\xe8\xff"), 1007, "UTF-8"),
    ],
)
def test_protocol_errors_fail_the_connection_with_rfc_codes(data: bytes, code: int, words: str) -> None:
    framer = Framer(None)
    framer.feed(data + raw(0x1, b"after"))
    assert isinstance(framer.error, ConnectionClosed)
    assert words in str(framer.error)
    assert not framer.open
    assert "after" not in framer.messages  # nothing is read past the error
    peer = server()
    peer.receive_data(b"".join(framer.pending))
    assert peer.close_rcvd is not None
    assert peer.close_rcvd.code == code


def test_split_handshake() -> None:
    head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
    frame = raw(0x1, b"hi")
    assert split_handshake(head + frame) == (head, frame)
    assert split_handshake(head[:-2]) is None
    assert split_handshake(b"HTTP/1.1 403 Forbidden\r\n\r\nno") is None
    # a head that can still become a 101 waits; anything else is a refusal for websockets
    assert not not_a_101(b"HTTP/1.1 1")
    assert not not_a_101(head[:-2])
    assert not_a_101(b"HTTP/1.1 403 Forbidden\r\n")
    assert not_a_101(b"HTTP/1.1 101 " + b"x" * 70_000)
