"""Byte-level parity on a PLAIN connection: the same raw frames and HTTP requests
sent to upstream 0.10.0's server (``serve_echo.py``) and to ours (``openenv serve
envs/echo_env``) get replies with the same JSON structure, and where the env's
values agree, the same bytes.

The client side is the plain ``websockets`` client of our venv with no
subprotocol, as upstream's client connects. Both servers run the echo env with the
same behaviour; they differ in the env's own models only:

* our ``EchoState`` has one more field, ``total_chars`` (``State`` allows extras);
* our ``Observation`` schema has ``truncated`` (rfcs/0001 section 2, an extension;
  it is never sent on a plain connection);
* ``/metadata`` values (name, description, version) are each env's own.

Intentional protocol differences (rfcs/0001 section 9) are documented where they
show, in ``test_documented_differences`` and in the docstrings, not asserted equal:

* ``step``/``state`` before ``reset`` is ``RESET_REQUIRED`` on ours; upstream steps
  whatever env it has;
* unknown reset keys reach our env as ``options`` (upstream drops them by signature
  filtering); the reply is the same;
* a request ``id`` is an extension we accept on any connection; upstream rejects
  every unknown top-level key with VALIDATION_ERROR;
* at capacity a plain socket is closed with 1013 by ours, 1000 by upstream
  (rfcs/0001 sections 4.4 and 7);
* concurrency is on by default on ours (1024 sessions; upstream: 1); both servers
  here are started with 2 slots.

Error frames: the ``message`` texts differ (ours say what failed, upstream's say
``"Invalid message"``) but keys, codes and ``loc`` agree. Our ``errors`` items carry
``type``, ``loc`` and ``msg`` (rfcs/0001 section 5); upstream's pydantic items also
carry ``input`` and ``url``, which upstream's client never reads.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

pytestmark = pytest.mark.upstream

RECV_TIMEOUT_S = 5.0


@pytest.fixture(scope="module")
def servers(upstream_server: Any, interop: SimpleNamespace) -> Iterator[SimpleNamespace]:
    """``up``: the shared upstream server; ``ours``: our CLI server, same 2 slots."""
    (ours,) = interop.start_ours(interop.OurServer(max_sessions=interop.UPSTREAM_MAX_SESSIONS))
    try:
        yield SimpleNamespace(up=upstream_server, ours=ours)
    finally:
        ours.stop()


# --- helpers ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def plain_ws(url: str) -> Iterator[ClientConnection]:
    """A raw WebSocket with no subprotocol (what upstream's client opens)."""
    with connect(url, open_timeout=5, close_timeout=2, max_size=None) as ws:
        assert ws.subprotocol is None
        yield ws


def exchange(url: str, frames: list[str]) -> list[str]:
    """Send each frame on ONE socket and read its one reply (raw text)."""
    replies = []
    with plain_ws(url) as ws:
        for frame in frames:
            ws.send(frame)
            reply = ws.recv(timeout=RECV_TIMEOUT_S)
            assert isinstance(reply, str), reply
            replies.append(reply)
    return replies


def both(servers: SimpleNamespace, frames: list[str]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(upstream reply, our reply)`` per frame, decoded."""
    up = exchange(servers.up.ws_url, frames)
    ours = exchange(servers.ours.ws_url, frames)
    return [(json.loads(u), json.loads(o)) for u, o in zip(up, ours, strict=True)]


def shape(value: Any) -> Any:
    """The JSON structure: the same keys, with each value replaced by its type."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def expect_close(ws: ClientConnection) -> tuple[int | None, str]:
    """Wait for the server's Close; fail on any frame before it."""
    try:
        frame = ws.recv(timeout=RECV_TIMEOUT_S)
    except ConnectionClosed as exc:
        rcvd = exc.rcvd
    else:
        pytest.fail(f"expected the socket to close, got a frame: {frame!r}")
    assert rcvd is not None, "the connection ended without a Close frame from the server"
    return rcvd.code, rcvd.reason


# --- WebSocket: the happy path ------------------------------------------------------------------


def test_reset_and_step_frames_are_byte_identical(servers: SimpleNamespace) -> None:
    """reset (with and without ``data``/seed/episode_id) and step replies: same bytes.

    ``{"unknown_kw": 1}``: upstream drops the key by signature filtering, ours passes it
    to the env as ``options`` (rfcs/0001 section 9); the reply is the same.
    """
    frames = [
        '{"type": "reset"}',
        '{"type": "reset", "data": {}}',
        '{"type": "reset", "data": {"seed": 42}}',
        '{"type": "reset", "data": {"seed": 42, "episode_id": "ep-7"}}',
        '{"type": "reset", "data": {"unknown_kw": 1}}',
        '{"type": "step", "data": {"message": "hello"}}',
        '{"type": "step", "data": {"message": ""}}',
        '{"type": "step", "data": {"message": "hello-0"}}',
        '{"type": "step", "data": {"message": "x", "metadata": {"k": "v"}}}',
        '{"type":"step","data":{"message":"compact separators"}}',
    ]
    up = exchange(servers.up.ws_url, frames)
    ours = exchange(servers.ours.ws_url, frames)
    for frame, u, o in zip(frames, up, ours, strict=True):
        assert o == u, f"{frame}\n upstream: {u}\n ours:     {o}"
    assert json.loads(up[7])["data"]["reward"] == 0.7000000000000001  # len*0.1, float repr kept


def test_state_frame(servers: SimpleNamespace) -> None:
    """``{"type": "state"}`` (no ``data``): the same ``state`` reply, plus our echo
    env's own ``total_chars`` field."""
    frames = [
        '{"type": "reset", "data": {"episode_id": "ep-state"}}',
        '{"type": "step", "data": {"message": "ab"}}',
        '{"type": "step", "data": {"message": "cde"}}',
        '{"type": "state"}',
    ]
    (*_, (up, ours)) = both(servers, frames)
    assert up == {"type": "state", "data": {"episode_id": "ep-state", "step_count": 2}}
    assert ours["type"] == "state"
    assert ours["data"].pop("total_chars") == 5
    assert ours == up

    # Without an episode_id both make one up: a string.
    (_, (up, ours)) = both(servers, ['{"type": "reset"}', '{"type": "state"}'])
    ours["data"].pop("total_chars")
    assert shape(ours) == shape(up) == {"type": "str", "data": {"episode_id": "str", "step_count": "int"}}


def test_close_has_no_reply_and_closes_1000(servers: SimpleNamespace) -> None:
    """``{"type": "close"}``: no reply frame; the server sends Close 1000 with an empty
    reason. ``{"type": "close", "data": {}}`` is rejected (``loc: ["data"]``) and the
    socket stays open."""
    for server in (servers.up, servers.ours):
        with plain_ws(server.ws_url) as ws:
            ws.send('{"type": "reset"}')
            assert json.loads(ws.recv(timeout=RECV_TIMEOUT_S))["type"] == "observation"
            ws.send('{"type": "close", "data": {}}')
            err = json.loads(ws.recv(timeout=RECV_TIMEOUT_S))
            assert err["data"]["code"] == "VALIDATION_ERROR"
            assert [e["loc"] for e in err["data"]["errors"]] == [["data"]]
            ws.send('{"type": "close"}')
            assert expect_close(ws) == (1000, ""), server.url


def test_mcp_frames(servers: SimpleNamespace) -> None:
    """``mcp`` over ``/ws``: a malformed request gets the same ``-32600`` (texts differ).
    ``tools/list`` differs by design: upstream's echo env has no MCP tools (-32603), ours
    lists its action as a tool, bound to the socket's session."""
    frames = [
        '{"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 1}}',
        '{"type": "mcp", "data": {}}',
    ]
    up = exchange(servers.up.ws_url, frames)
    ours = exchange(servers.ours.ws_url, frames)
    assert json.loads(up[0])["data"]["error"]["code"] == -32603
    listed = json.loads(ours[0])
    assert listed["type"] == "mcp"
    assert [t["name"] for t in listed["data"]["result"]["tools"]] == ["echo"]
    u, o = json.loads(up[1]), json.loads(ours[1])
    assert shape(o) == shape(u)
    assert o["data"]["error"]["code"] == u["data"]["error"]["code"] == -32600
    assert o["data"]["id"] is u["data"]["id"] is None


# --- WebSocket: errors -------------------------------------------------------------------------------


def _error_data(reply: dict[str, Any], code: str) -> dict[str, Any]:
    assert reply["type"] == "error", reply
    data: dict[str, Any] = reply["data"]
    assert data["code"] == code, reply
    assert isinstance(data["message"], str), reply
    assert data["message"], reply
    return data


def test_malformed_json(servers: SimpleNamespace) -> None:
    """Not JSON: INVALID_JSON, data keys ``message``/``code`` only; the socket stays
    open (the trailing reset is answered)."""
    frames = ["{not json", "", '{"type": "reset"', '{"type": "reset"}']
    replies = both(servers, frames)
    for frame, (u, o) in zip(frames[:-1], replies[:-1], strict=True):
        ud, od = _error_data(u, "INVALID_JSON"), _error_data(o, "INVALID_JSON")
        assert shape(o) == shape(u), frame
        assert ud["message"].startswith("Invalid JSON: "), frame
        assert od["message"].startswith("Invalid JSON: "), frame
    assert replies[-1][0] == replies[-1][1]


def test_unknown_type(servers: SimpleNamespace) -> None:
    """Missing or unknown ``type``: UNKNOWN_TYPE, the same keys."""
    frames = [
        '{"type": "bogus"}',
        "{}",
        '{"type": null}',
        '{"data": {"message": "x"}}',
        '{"type": "observation", "data": {}}',
        '{"type": "reset"}',
    ]
    replies = both(servers, frames)
    for frame, (u, o) in zip(frames[:-1], replies[:-1], strict=True):
        _error_data(u, "UNKNOWN_TYPE")
        _error_data(o, "UNKNOWN_TYPE")
        assert shape(o) == shape(u) == {"type": "str", "data": {"message": "str", "code": "str"}}, frame
    assert replies[-1][0] == replies[-1][1]


ACTION_ERRORS = [
    # (frame, loc, pydantic error type) -- loc relative to the action, as upstream
    ('{"type": "step", "data": {}}', ["message"], "missing"),
    ('{"type": "step", "data": {"message": 5}}', ["message"], "string_type"),
    ('{"type": "step", "data": {"message": "x", "extra": 1}}', ["extra"], "extra_forbidden"),
    ('{"type": "step", "data": {"message": ["a"]}}', ["message"], "string_type"),
]
ENVELOPE_ERRORS = [
    # (frame, loc) -- the message itself is wrong; error types may differ
    # (upstream validates a dict, ours the model: "dict_type" vs "model_type")
    ('{"type": "step"}', ["data"]),
    ('{"type": "step", "data": null}', ["data"]),
    ('{"type": "reset", "data": null}', ["data"]),
    ('{"type": "state", "data": {}}', ["data"]),
]


def test_invalid_action_validation_error(servers: SimpleNamespace) -> None:
    """An invalid action: VALIDATION_ERROR with ``errors`` whose ``loc`` is relative
    to the action (``["message"]``, not ``["data", "message"]``) and whose ``type`` and
    ``msg`` are pydantic's on both. Our items have ``type``/``loc``/``msg``;
    upstream's also ``input``/``url`` (rfcs/0001 section 5). The socket stays open."""
    frames = ['{"type": "reset"}'] + [f for f, _, _ in ACTION_ERRORS] + ['{"type": "state"}']
    replies = both(servers, frames)
    for (frame, loc, kind), (u, o) in zip(ACTION_ERRORS, replies[1:-1], strict=True):
        ud, od = _error_data(u, "VALIDATION_ERROR"), _error_data(o, "VALIDATION_ERROR")
        assert set(od) == set(ud) == {"message", "code", "errors"}, frame
        assert len(od["errors"]) == len(ud["errors"]) == 1, frame
        ue, oe = ud["errors"][0], od["errors"][0]
        assert oe["loc"] == ue["loc"] == loc, frame
        assert oe["type"] == ue["type"] == kind, frame
        assert oe["msg"] == ue["msg"], frame
        assert set(oe) == {"type", "loc", "msg"}, frame
        assert set(oe) <= set(ue), frame
    up_state, our_state = replies[-1]
    assert up_state["data"]["step_count"] == 0  # no invalid step ran
    assert our_state["data"]["step_count"] == 0


def test_invalid_message_validation_error(servers: SimpleNamespace) -> None:
    """A malformed message (missing or null ``data``, ``data`` on ``state``):
    VALIDATION_ERROR with the same ``loc``; the socket stays open."""
    frames = [f for f, _ in ENVELOPE_ERRORS] + ['{"type": "reset"}']
    replies = both(servers, frames)
    for (frame, loc), (u, o) in zip(ENVELOPE_ERRORS, replies[:-1], strict=True):
        ud, od = _error_data(u, "VALIDATION_ERROR"), _error_data(o, "VALIDATION_ERROR")
        assert set(od) == set(ud), frame
        assert [e["loc"] for e in od["errors"]] == [e["loc"] for e in ud["errors"]] == [loc], frame
    assert replies[-1][0] == replies[-1][1]


def test_capacity_frame(servers: SimpleNamespace, interop: SimpleNamespace) -> None:
    """At capacity: the handshake succeeds (101), then one unsolicited error frame,
    identical on both, then the server closes. Documented difference: the close code
    is 1000 on upstream, 1013 ("try again later") on ours (rfcs/0001 4.4 and 7)."""
    interop.wait_upstream_slots_free(servers.up)
    servers.ours.wait_sessions(0)
    frames, codes = {}, {}
    for name, server in (("up", servers.up), ("ours", servers.ours)):
        with contextlib.ExitStack() as stack:
            for _ in range(server.max_sessions):
                ws = stack.enter_context(plain_ws(server.ws_url))
                ws.send('{"type": "reset"}')
                assert json.loads(ws.recv(timeout=RECV_TIMEOUT_S))["type"] == "observation"
            with plain_ws(server.ws_url) as extra:
                frames[name] = extra.recv(timeout=RECV_TIMEOUT_S)  # unsolicited: nothing was sent
                codes[name] = expect_close(extra)
    interop.wait_upstream_slots_free(servers.up)
    assert frames["ours"] == frames["up"], frames
    data = _error_data(json.loads(frames["up"]), "CAPACITY_REACHED")
    assert data == {
        "message": "Server at capacity: 2/2 sessions active. Cannot accept new connections.",
        "code": "CAPACITY_REACHED", "active_sessions": 2, "max_sessions": 2,
    }
    assert codes == {"up": (1000, ""), "ours": (1013, "")}


def test_documented_differences(servers: SimpleNamespace) -> None:
    """rfcs/0001 section 9, pinned so that a change is noticed (not parity):

    * ``step`` before ``reset``: upstream steps the env it built at connect; ours
      answers RESET_REQUIRED (an error frame of the usual shape), socket open.
    * ``"id"`` on a request: upstream rejects any unknown top-level key
      (VALIDATION_ERROR, ``loc: ["id"]``); ours accepts request ids (an extension)
      and answers the request. Upstream's client never sends one.
    """
    step = '{"type": "step", "data": {"message": "hello"}}'
    (up,) = exchange(servers.up.ws_url, [step])
    (ours,) = exchange(servers.ours.ws_url, [step])
    assert json.loads(up)["type"] == "observation"
    assert shape(json.loads(ours)) == {"type": "str", "data": {"message": "str", "code": "str"}}
    _error_data(json.loads(ours), "RESET_REQUIRED")

    frame = '{"type": "reset", "data": {}, "id": "6"}'
    (up,) = exchange(servers.up.ws_url, [frame])
    (ours,) = exchange(servers.ours.ws_url, [frame])
    ud = _error_data(json.loads(up), "VALIDATION_ERROR")
    assert [e["loc"] for e in ud["errors"]] == [["id"]]
    assert json.loads(ours)["type"] == "observation"


# --- HTTP -----------------------------------------------------------------------------------------------


def _both_http(
    servers: SimpleNamespace, interop: SimpleNamespace, method: str, path: str, body: bytes | None = None
) -> tuple[tuple[int, bytes], tuple[int, bytes]]:
    return (
        interop.http(method, servers.up.url + path, body),
        interop.http(method, servers.ours.url + path, body),
    )


def test_http_health_identical(servers: SimpleNamespace, interop: SimpleNamespace) -> None:
    up, ours = _both_http(servers, interop, "GET", "/health")
    assert ours == up == (200, b'{"status":"healthy"}')


def test_http_schema_and_metadata(servers: SimpleNamespace, interop: SimpleNamespace) -> None:
    """``/schema``: the same four keys and the same action schema fields; our
    observation schema adds ``truncated`` (an extension), our echo state
    ``total_chars``. ``/metadata``: the same keys (values are each env's own)."""
    (us, ub), (os_, ob) = _both_http(servers, interop, "GET", "/schema")
    assert us == os_ == 200
    up, ours = json.loads(ub), json.loads(ob)
    assert list(ours) == list(up) == ["action", "observation", "state", "reset_observation"]
    assert set(ours["action"]["properties"]) == set(up["action"]["properties"]) == {"metadata", "message"}
    assert ours["action"]["required"] == up["action"]["required"] == ["message"]
    assert ours["action"]["additionalProperties"] is up["action"]["additionalProperties"] is False
    assert set(ours["observation"]["properties"]) - set(up["observation"]["properties"]) == {"truncated"}
    assert set(up["observation"]["properties"]) <= set(ours["observation"]["properties"])
    assert set(ours["state"]["properties"]) - set(up["state"]["properties"]) == {"total_chars"}
    assert ours["reset_observation"] == ours["observation"]

    (us, ub), (os_, ob) = _both_http(servers, interop, "GET", "/metadata")
    assert us == os_ == 200
    assert list(json.loads(ob)) == list(json.loads(ub))


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/reset", b"{}"),
        ("/reset", None),
        ("/reset", b'{"seed": 42, "episode_id": "ep-9"}'),
        ("/reset", b'{"foo": 1}'),
        ("/step", b'{"action": {"message": "hello"}}'),
        ("/step", b'{"action": {"message": "x"}, "id": "7"}'),
        ("/step", b'{"action": {"message": "x"}, "timeout_s": 5, "request_id": "r1"}'),
    ],
)
def test_http_reset_and_step_identical(
    servers: SimpleNamespace, interop: SimpleNamespace, path: str, body: bytes | None
) -> None:
    """POST /reset and /step: the same bytes, with ``"metadata": null`` at the top
    level (HTTP always carries it; WebSocket omits it when empty)."""
    up, ours = _both_http(servers, interop, "POST", path, body)
    assert ours == up
    status, raw = up
    assert status == 200
    data = json.loads(raw)
    assert list(data) == ["observation", "reward", "done", "metadata"]
    assert data["metadata"] is None


def test_http_state(servers: SimpleNamespace, interop: SimpleNamespace) -> None:
    """GET /state: a fresh env's state; ours adds the echo env's ``total_chars``."""
    (us, ub), (os_, ob) = _both_http(servers, interop, "GET", "/state")
    assert us == os_ == 200
    up, ours = json.loads(ub), json.loads(ob)
    assert ours.pop("total_chars") == 0
    assert shape(ours) == shape(up) == {"episode_id": "str", "step_count": "int"}
    assert ours["step_count"] == up["step_count"] == 0


def test_http_mcp(servers: SimpleNamespace, interop: SimpleNamespace) -> None:
    """POST /mcp: always HTTP 200; ``{}`` gives -32600 (texts differ) and bad JSON
    -32700 (byte-identical). ``tools/list`` differs by design: upstream's echo env has no
    MCP tools (-32603), ours lists its action as a tool (tests/mcp)."""
    up, ours = _both_http(servers, interop, "POST", "/mcp", b"{}")
    assert up[0] == ours[0] == 200
    u, o = json.loads(up[1]), json.loads(ours[1])
    assert shape(o) == shape(u)
    assert list(o) == list(u) == ["jsonrpc", "id", "error"]
    assert list(o["error"]) == list(u["error"]) == ["code", "message", "data"]
    assert o["error"]["code"] == u["error"]["code"] == -32600
    assert o["id"] is u["id"] is None
    assert o["error"]["data"] is u["error"]["data"] is None

    up, ours = _both_http(servers, interop, "POST", "/mcp", b"{nope")
    assert ours == up
    assert up[0] == 200
    body = b'{"jsonrpc": "2.0", "method": "tools/list", "id": 1}'
    up, ours = _both_http(servers, interop, "POST", "/mcp", body)
    assert up[0] == ours[0] == 200
    assert json.loads(up[1])["error"]["code"] == -32603
    assert [t["name"] for t in json.loads(ours[1])["result"]["tools"]] == ["echo"]


def test_http_invalid_action_is_422(servers: SimpleNamespace, interop: SimpleNamespace) -> None:
    """POST /step with an invalid action: 422 on both with a ``detail`` list of pydantic
    errors (``type``, ``msg`` agree). Ours adds ``"error": {code, message, errors}``
    (rfcs/0001 section 3). For ``loc`` see the next test."""
    for body in (b'{"action": {}}', b'{"action": {"message": "x", "extra": 1}}'):
        (us, ub), (os_, ob) = _both_http(servers, interop, "POST", "/step", body)
        assert us == os_ == 422, body
        up, ours = json.loads(ub), json.loads(ob)
        assert set(ours) - set(up) == {"error"}
        pairs = [[(e["type"], e["msg"]) for e in r["detail"]] for r in (ours, up)]
        assert pairs[0] == pairs[1], body
        assert ours["error"]["code"] == "VALIDATION_ERROR"


def test_http_invalid_action_loc_relative_to_action(
    servers: SimpleNamespace, interop: SimpleNamespace
) -> None:
    (_, ub), (_, ob) = _both_http(servers, interop, "POST", "/step", b'{"action": {}}')
    assert [e["loc"] for e in json.loads(ob)["detail"]] == [e["loc"] for e in json.loads(ub)["detail"]]
