"""The direct channel between uvicorn's WebSocket protocol and the ``/ws`` loop (``_direct.py``).

Every socket test of the server runs over it (the ``serve`` fixture uses the production
uvicorn options); these cover what is its own: it is in force, a backlog past the
high-water mark pauses and resumes reading without losing or reordering a frame, bad
UTF-8 closes only its connection, and a connection that goes away ends its loop.
"""

from __future__ import annotations

import orjson
import pytest

from openenv import EnvClient
from openenv.server import _direct
from openenv.server._direct import HIGH_WATER, DirectChannel

from .._envs import MODELS, TAction
from .._wire import call, connect, expect_closed, recv


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
    finally:
        ws.close()
    assert [r["data"]["observation"]["step"] for r in replies] == list(range(1, n + 1))
    assert [r["data"]["observation"]["message"] for r in replies] == [str(i) for i in range(n)]
    assert paused, "the inbox never reached the high-water mark: the test did not test it"
    assert max(paused) >= HIGH_WATER
    assert not enabled[0]._p.read_paused  # resumed once drained


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
