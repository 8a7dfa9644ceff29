"""``/ws`` over real sockets: upstream frames, extensions, bad input, capacity, idle, pings.

Raw frames go through the plain ``websockets`` client (``tests/_wire.py``), which
validates every reply against the server reply models.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed

from openenv import EnvClient, Execution, FrameTooLarge
from openenv._types import SUBPROTOCOL
from openenv.server._ws import CLOSE_CAPACITY, CLOSE_IDLE, CLOSE_NORMAL

from .._envs import MODELS, TAction, make_env
from .._wire import call, connect, expect_closed, expect_error, masked_frame, raw_handshake, recv, send
from ..conftest import wait_until
from ._idle_clock import idle_clock

__all__ = ["idle_clock"]  # the fixture, used by name

STEP = {"type": "step", "data": {"message": "hi"}}


def open_episode(server):
    """Another connection, mid-episode: it must not notice what the test does."""
    ws = connect(server.ws_url)
    assert call(ws, {"type": "reset"})["type"] == "observation"
    assert call(ws, STEP)["data"]["observation"]["step"] == 1
    return ws


def assert_unaffected(server, ws, steps_before=1):
    reply = call(ws, STEP)
    assert reply["type"] == "observation"
    assert reply["data"]["observation"]["step"] == steps_before + 1
    assert httpx.get(f"{server.url}/health", timeout=5).json() == {"status": "healthy"}


# --- upstream (plain) connections ----------------------------------------------------------


def test_plain_connection_negotiates_no_subprotocol(server):
    with connect(server.ws_url) as ws:
        assert ws.subprotocol is None
        server.wait_active(1)  # a plain connection's session exists from the handshake


def test_plain_reset_reply_has_upstream_shape_only(server):
    with connect(server.ws_url) as ws:
        reply = call(ws, {"type": "reset", "data": {"seed": 5, "episode_id": "ep", "level": 3}})
    assert set(reply) == {"type", "data"}
    assert reply["type"] == "observation"
    data = reply["data"]
    assert set(data) == {"observation", "reward", "done"}
    assert data["reward"] is None
    assert data["done"] is False
    obs = data["observation"]
    assert {"done", "reward", "truncated"}.isdisjoint(obs)
    assert (obs["seed"], obs["episode_id"], obs["options"]) == (5, "ep", {"level": 3})
    assert obs["metadata"] == {}


def test_plain_step_and_state(server):
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset", "data": {"episode_id": "e1"}})
        step = call(ws, STEP)
        state = call(ws, {"type": "state"})
    assert step["data"]["reward"] == 1.0
    assert step["data"]["observation"]["message"] == "hi"
    assert set(state) == {"type", "data"}
    assert state["type"] == "state"
    assert state["data"]["step_count"] == 1
    assert state["data"]["episode_id"] == "e1"


def test_non_empty_metadata_is_repeated_at_top_level(server):
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        reply = call(ws, {"type": "step", "data": {"message": "with-metadata"}})
    assert reply["data"]["metadata"] == {"echo": "with-metadata"}
    assert reply["data"]["observation"]["metadata"] == {"echo": "with-metadata"}


def test_plain_close_ends_session_and_socket_without_reply(server):
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        send(ws, {"type": "close"})
        assert expect_closed(ws) == CLOSE_NORMAL
    server.wait_active(0)
    server.wait_closes([1])


def test_message_after_close_on_plain_connection_fails(server):
    other = open_episode(server)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        send(ws, {"type": "close"})
        expect_closed(ws)
        with pytest.raises(ConnectionClosed):
            send(ws, STEP)
    assert server.tracker.count("step") == 1  # only the other connection's
    assert_unaffected(server, other)
    other.close()


def test_mcp_frame_gets_a_json_rpc_answer(server):
    with connect(server.ws_url) as ws:
        reply = call(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 4}})
        other = call(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "nope", "id": 5}})
        bad = call(ws, {"type": "mcp", "data": {}})
    # With the mcp extra (dev installs it) the frame reaches the MCP bridge: the action is a tool.
    assert reply["type"] == "mcp"
    assert reply["data"]["id"] == 4
    assert [t["name"] for t in reply["data"]["result"]["tools"]] == ["t"]
    assert other["data"]["error"]["code"] == -32601
    assert bad["data"]["error"]["code"] == -32600


# --- extended connections --------------------------------------------------------------------


def test_extended_connection_negotiates_the_subprotocol(server):
    with connect(server.ws_url, extended=True) as ws:
        assert ws.subprotocol == SUBPROTOCOL
        assert server.active == 0  # sessions start with reset, not at connect


def test_extended_replies_echo_id_and_session_and_carry_truncated(server):
    with connect(server.ws_url, extended=True) as ws:
        reset = call(ws, {"type": "reset", "id": "r1", "session": "a"})
        step = call(
            ws, {"type": "step", "id": 2, "session": "a", "data": {"message": "x", "truncated": True}}
        )
        state = call(ws, {"type": "state", "id": 3, "session": "a"})
        default = call(ws, {"type": "reset", "id": 4})
    assert (reset["id"], reset["session"]) == ("r1", "a")
    assert reset["data"]["truncated"] is False
    assert (step["id"], step["session"]) == (2, "a")
    assert step["data"]["truncated"] is True
    assert step["data"]["done"] is True
    assert (state["id"], state["session"], state["data"]["step_count"]) == (3, "a", 1)
    assert default["id"] == 4
    assert "session" not in default


def test_named_sessions_are_independent_envs(server):
    with connect(server.ws_url, extended=True) as ws:
        a = call(ws, {"type": "reset", "session": "a"})["data"]["observation"]["instance"]
        b = call(ws, {"type": "reset", "session": "b"})["data"]["observation"]["instance"]
        call(ws, {"type": "step", "session": "a", "data": {}})
        call(ws, {"type": "step", "session": "a", "data": {}})
        sa = call(ws, {"type": "state", "session": "a"})["data"]
        sb = call(ws, {"type": "state", "session": "b"})["data"]
        assert server.active == 2
    assert a != b
    assert (sa["instance"], sa["step_count"]) == (a, 2)
    assert (sb["instance"], sb["step_count"]) == (b, 0)
    server.wait_active(0)
    server.wait_closes([1, 1])


def test_reset_again_reuses_the_session(server):
    with connect(server.ws_url, extended=True) as ws:
        first = call(ws, {"type": "reset", "session": "a"})["data"]["observation"]["instance"]
        call(ws, {"type": "step", "session": "a", "data": {}})
        again = call(ws, {"type": "reset", "session": "a"})["data"]["observation"]["instance"]
        assert call(ws, {"type": "state", "session": "a"})["data"]["step_count"] == 0
    assert first == again
    assert len(server.tracker.instances) == 1


def test_close_named_session_replies_closed_and_keeps_socket(server):
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "a"})
        call(ws, {"type": "reset", "session": "b"})
        assert call(ws, {"type": "close", "session": "a", "id": 9}) == {
            "type": "closed",
            "id": 9,
            "session": "a",
        }
        server.wait_active(1)
        assert server.tracker.close_counts() == [1, 0]
        assert call(ws, {"type": "step", "session": "b", "data": {}})["type"] == "observation"


def test_message_after_closing_a_named_session_needs_a_reset(server):
    other = open_episode(server)
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "a"})
        call(ws, {"type": "close", "session": "a", "id": 1})
        expect_error(call(ws, {"type": "step", "session": "a", "id": 2, "data": {}}), "RESET_REQUIRED")
        # closing again is harmless, and a reset opens a fresh env under the same key
        assert call(ws, {"type": "close", "session": "a", "id": 3})["type"] == "closed"
        fresh = call(ws, {"type": "reset", "session": "a"})
    assert fresh["data"]["observation"]["instance"] == 3
    assert server.tracker.close_counts()[1] == 1
    assert_unaffected(server, other)
    other.close()


def test_close_default_session_with_id_on_extended_connection(server):
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset"})
        assert call(ws, {"type": "close", "id": 5}) == {"type": "closed", "id": 5}
        expect_error(call(ws, {"type": "state", "id": 6}), "RESET_REQUIRED")
        assert call(ws, {"type": "reset", "id": 7})["type"] == "observation"


# --- bad input: the documented error, the server and other sessions unaffected -----------------


@pytest.mark.parametrize("extended", [False, True])
def test_malformed_json_is_invalid_json(server, extended):
    other = open_episode(server)
    with connect(server.ws_url, extended=extended) as ws:
        call(ws, {"type": "reset"})
        ws.send('{"type": "step", "data": ')
        expect_error(recv(ws), "INVALID_JSON")
        assert call(ws, STEP)["type"] == "observation"  # this connection still works
    assert_unaffected(server, other)
    other.close()


def test_unknown_message_type_is_unknown_type(server):
    other = open_episode(server)
    with connect(server.ws_url, extended=True) as ws:
        reply = call(ws, {"type": "teleport", "id": 77, "session": "s"})
        expect_error(reply, "UNKNOWN_TYPE")
        assert (reply["id"], reply["session"]) == (77, "s")  # salvaged from the bad frame
        expect_error(call(ws, {"id": 78}), "UNKNOWN_TYPE")
    assert_unaffected(server, other)
    other.close()


def test_invalid_action_is_validation_error_with_errors(server):
    other = open_episode(server)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        data = expect_error(call(ws, {"type": "step", "data": {"message": 5}}), "VALIDATION_ERROR")
        assert isinstance(data["errors"], list)
        assert data["errors"]
        assert data["errors"][0]["loc"] == ["message"]  # relative to the action, as upstream
        assert {"type", "loc", "msg"} <= set(data["errors"][0])
        unknown = expect_error(call(ws, {"type": "step", "data": {"bogus": 1}}), "VALIDATION_ERROR")
        assert unknown["errors"][0]["type"] == "extra_forbidden"
        # the invalid actions never reached the env
        assert call(ws, STEP)["data"]["observation"]["step"] == 1
    assert_unaffected(server, other)
    other.close()


def test_unknown_top_level_key_is_validation_error(server):
    with connect(server.ws_url) as ws:
        expect_error(call(ws, {"type": "reset", "surprise": 1}), "VALIDATION_ERROR")
        assert call(ws, {"type": "reset"})["type"] == "observation"


def test_oversize_frame_closes_that_socket_with_1009(serve):
    server = serve(max_frame_bytes=2048)
    other = open_episode(server)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        send(ws, {"type": "step", "data": {"message": "x" * 10_000}})
        assert expect_closed(ws) == 1009
    server.wait_active(1)
    server.wait_closes([0, 1])
    assert_unaffected(server, other)
    with connect(server.ws_url) as fresh:  # still accepting connections
        assert call(fresh, {"type": "reset"})["type"] == "observation"
    other.close()


def test_frame_just_under_the_limit_is_fine(serve):
    server = serve(max_frame_bytes=4096)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        reply = call(ws, {"type": "step", "data": {"message": "y" * 3900}})
    assert reply["data"]["observation"]["message"] == "y" * 3900


def test_sync_client_raises_frame_too_large(serve):
    server = serve(max_frame_bytes=2048)
    other = open_episode(server)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        with pytest.raises(FrameTooLarge):
            env.step(TAction(message="x" * 10_000))
    server.wait_active(1)
    assert_unaffected(server, other)
    other.close()


@pytest.mark.parametrize("extended", [False, True])
def test_step_before_reset_is_reset_required(server, extended):
    other = open_episode(server)
    with connect(server.ws_url, extended=extended) as ws:
        expect_error(call(ws, STEP), "RESET_REQUIRED")
        expect_error(call(ws, {"type": "state"}), "RESET_REQUIRED")
        assert call(ws, {"type": "reset"})["type"] == "observation"
        assert call(ws, STEP)["type"] == "observation"
    assert_unaffected(server, other)
    other.close()


def test_step_on_unknown_named_session_is_reset_required(server):
    with connect(server.ws_url, extended=True) as ws:
        reply = call(ws, {"type": "step", "session": "never", "id": 1, "data": {}})
        data = expect_error(reply, "RESET_REQUIRED")
        assert "never" in data["message"]
        assert reply["session"] == "never"


def test_env_that_raises_is_execution_error_and_session_survives(server):
    other = open_episode(server)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        call(ws, STEP)
        data = expect_error(call(ws, {"type": "step", "data": {"fail": "boom"}}), "EXECUTION_ERROR")
        assert data["exception"] == "RuntimeError"
        assert "boom" in data["message"]
        after = call(ws, STEP)
        assert after["data"]["observation"]["step"] == 2
        assert after["data"]["observation"]["instance"] == call(ws, {"type": "state"})["data"]["instance"]
    assert_unaffected(server, other)
    other.close()
    server.wait_active(0)
    server.wait_closes([1, 1])


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_reset_that_raises_is_execution_error(serve, kind):
    server = serve(make_env(kind, fail_on_reset=True))
    with connect(server.ws_url) as ws:
        data = expect_error(call(ws, {"type": "reset"}), "EXECUTION_ERROR")
        assert data["exception"] == "ValueError"
        expect_error(call(ws, {"type": "reset"}), "EXECUTION_ERROR")  # still answering


def test_factory_error_on_plain_connection_then_close(serve):
    server = serve(make_env(fail_on_init=True))
    with connect(server.ws_url) as ws:
        data = expect_error(recv(ws), "FACTORY_ERROR")
        assert "cannot build this env" in data["message"]
        assert data["factory_name"]
        assert expect_closed(ws) == CLOSE_NORMAL
    assert server.active == 0


def test_factory_error_on_extended_connection_is_per_request(serve):
    server = serve(make_env(fail_on_init=True))
    with connect(server.ws_url, extended=True) as ws:
        expect_error(call(ws, {"type": "reset", "id": 1}), "FACTORY_ERROR")
        expect_error(call(ws, {"type": "reset", "id": 2}), "FACTORY_ERROR")
    assert server.active == 0


def test_client_vanishing_mid_step_closes_its_env_and_frees_the_slot(serve):
    gate = threading.Event()  # the step is held until the client is gone (not a 1 s sleep)
    server = serve(make_env(step_gate=gate))
    other = open_episode(server)
    sock = raw_handshake(server.port)
    sock.sendall(masked_frame(b'{"type": "reset"}'))
    wait_until(lambda: server.tracker.count("reset") == 2, what="reset on the raw socket")
    sock.sendall(masked_frame(orjson.dumps({"type": "step", "data": {"message": "hold"}})))
    try:
        wait_until(lambda: server.tracker.count("held") == 1, what="the held step to start")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # RST: gone without a close frame, mid-step
        assert server.active == 2
        assert server.tracker.close_counts() == [0, 0]  # never closed under its running step
    finally:
        gate.set()
    server.wait_closes([0, 1], timeout_s=10)
    wait_until(lambda: server.http_active() == 1, what="GET /sessions to show the slot free")
    assert_unaffected(server, other)
    other.close()


# --- capacity ----------------------------------------------------------------------------------


def test_capacity_on_plain_connection_is_error_then_close(serve):
    server = serve(max_sessions=1)
    holder = open_episode(server)
    with connect(server.ws_url) as ws:
        data = expect_error(recv(ws), "CAPACITY_REACHED")
        assert (data["active_sessions"], data["max_sessions"]) == (1, 1)
        assert expect_closed(ws) == CLOSE_CAPACITY
    assert_unaffected(server, holder)
    holder.close()
    server.wait_active(0)
    with connect(server.ws_url) as ws:  # the slot is free again
        assert call(ws, {"type": "reset"})["type"] == "observation"


def test_capacity_on_extended_connection_is_per_message(serve):
    server = serve(max_sessions=1)
    holder = open_episode(server)
    with connect(server.ws_url, extended=True) as ws:
        reply = call(ws, {"type": "reset", "id": 1, "session": "a"})
        expect_error(reply, "CAPACITY_REACHED")
        assert (reply["id"], reply["session"]) == (1, "a")
        expect_error(call(ws, {"type": "state", "session": "a"}), "RESET_REQUIRED")  # socket open
        holder.close()
        server.wait_active(0)
        assert call(ws, {"type": "reset", "id": 2, "session": "a"})["type"] == "observation"
        assert server.active == 1


def test_named_sessions_count_against_capacity(serve):
    server = serve(max_sessions=2)
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "a"})
        call(ws, {"type": "reset", "session": "b"})
        expect_error(call(ws, {"type": "reset", "session": "c"}), "CAPACITY_REACHED")
        call(ws, {"type": "close", "session": "a", "id": 1})
        assert call(ws, {"type": "reset", "session": "c"})["type"] == "observation"


def test_env_class_max_sessions_lowers_the_limit(serve):
    server = serve(make_env(max_sessions=1), max_sessions=64)
    assert server.manager.max_sessions == 1
    holder = open_episode(server)
    with connect(server.ws_url) as ws:
        expect_error(recv(ws), "CAPACITY_REACHED")
    holder.close()


# --- idle reaping ------------------------------------------------------------------------------


def test_idle_plain_session_is_reaped_with_close_4408(serve):
    server = serve(idle_timeout_s=0.4)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        started = time.monotonic()
        assert expect_closed(ws) == CLOSE_IDLE
        assert time.monotonic() - started < 5
    assert server.active == 0
    assert server.http_active() == 0
    assert server.tracker.close_counts() == [1]


def test_extended_connection_with_only_idle_sessions_is_closed(serve):
    server = serve(idle_timeout_s=0.4)
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "a"})
        call(ws, {"type": "reset", "session": "b"})
        assert expect_closed(ws) == CLOSE_IDLE
    server.wait_active(0)
    server.wait_closes([1, 1])


def test_idle_named_session_on_busy_connection_is_closed_alone(serve, idle_clock):
    """Quiet time is the idle clock's (moved by the test), not the host's: "busy" steps
    after each 0.15 s, under the 0.2 s timeout; "idle" is quiet 0.3 s after the second."""
    server = serve(idle_timeout_s=0.2)
    idle_clock.watch(server.manager)
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "idle"})
        call(ws, {"type": "reset", "session": "busy"})
        for _ in range(3):  # a reaper pass after each 0.15 s and after each of busy's steps
            idle_clock.advance(0.15)
            idle_clock.settle()
            assert call(ws, {"type": "step", "session": "busy", "data": {}})["type"] == "observation"
            idle_clock.settle()
        assert server.tracker.close_counts()[:2] == [1, 0]
        expect_error(call(ws, {"type": "step", "session": "idle", "data": {}}), "SESSION_CLOSED")
        assert call(ws, {"type": "step", "session": "busy", "data": {}})["type"] == "observation"
        assert server.active == 1
        revived = call(ws, {"type": "reset", "session": "idle"})
        assert revived["data"]["observation"]["instance"] == 3
    server.wait_active(0)
    server.wait_closes([1, 1, 1])


def test_session_in_a_long_call_is_not_reaped(serve):
    server = serve(idle_timeout_s=0.3)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        reply = call(ws, {"type": "step", "data": {"sleep_s": 1.2, "message": "slow"}})
        assert reply["type"] == "observation"
        assert reply["data"]["observation"]["message"] == "slow"
        assert server.tracker.close_counts() == [0]
        assert call(ws, {"type": "state"})["data"]["step_count"] == 1
    server.wait_active(0)


def test_reaper_disabled_with_zero_timeout(serve):
    server = serve(idle_timeout_s=0)
    assert server.manager._reaper is None
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        time.sleep(0.5)
        assert call(ws, STEP)["type"] == "observation"


# --- half-open sockets (pings) -----------------------------------------------------------------


def test_peer_that_never_answers_pings_is_dropped_and_its_slot_freed(serve):
    interval, timeout = 0.3, 0.3
    server = serve(ping_interval_s=interval, ping_timeout_s=timeout)
    sock = raw_handshake(server.port)  # never reads again: no pongs
    try:
        connected = time.monotonic()
        server.wait_active(1)
        wait_until(
            lambda: server.active == 0,
            timeout_s=interval + timeout + 3,
            what="the silent peer's slot to be freed",
        )
        assert time.monotonic() - connected < interval + timeout + 3
        server.wait_closes([1])
    finally:
        sock.close()


def test_peer_that_answers_pings_stays_connected(serve):
    """Quiet 1.5 s, past a ping's 0.2 s + 1.0 s: a peer that did not answer would be gone;
    each pong has 1.0 s (a loaded host delayed one past 0.2 s)."""
    server = serve(ping_interval_s=0.2, ping_timeout_s=1.0)
    with connect(server.ws_url) as ws:  # websockets answers pings in its own thread
        call(ws, {"type": "reset"})
        time.sleep(1.5)
        assert call(ws, STEP)["type"] == "observation"
        assert server.tracker.close_counts() == [0]


def test_long_step_survives_pings(serve):
    """A 1.5 s step, past a ping's 0.2 s + 1.0 s; each pong has 1.0 s."""
    server = serve(ping_interval_s=0.2, ping_timeout_s=1.0)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        result = env.step(TAction(sleep_s=1.5, message="slow"))
    assert result.observation.message == "slow"


def test_idle_sync_client_outlives_the_ping_timeout(serve, monkeypatch):
    """The keepalive thread answers pings while no call runs (an agent thinking)."""
    monkeypatch.setattr("openenv.client._ws_blocking.KEEPALIVE_POLL_S", 0.05)
    server = serve(ping_interval_s=0.3, ping_timeout_s=1.5)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        time.sleep(4.0)  # e.g. an LLM thinking about its next action: > interval + timeout
        assert env.step(TAction(message="still here")).observation.message == "still here"


def test_sync_client_answers_pings_only_between_calls_without_a_thread_per_client(serve):
    server = serve()
    clients = [EnvClient(server.url, MODELS).connect() for _ in range(5)]
    try:
        names = [t.name for t in threading.enumerate() if t.name == "openenv-keepalive"]
        assert len(names) == 1  # one keepalive thread for the process, not one per client
    finally:
        for c in clients:
            c.close()


# --- batch -----------------------------------------------------------------------------------


def test_batch_replies_in_order_keeping_per_session_order(server):
    keys = [f"s{i}" for i in range(6)]
    with connect(server.ws_url, extended=True) as ws:
        resets = call(
            ws, {"type": "batch", "id": 1, "messages": [{"type": "reset", "session": k} for k in keys]}
        )
        assert resets["id"] == 1
        assert [r["session"] for r in resets["data"]] == keys
        messages = [
            {"type": "step", "session": "s0", "data": {"message": "a"}},
            {"type": "step", "session": "s1", "data": {"message": "b"}},
            {"type": "step", "session": "s0", "data": {"message": "c"}},
            {"type": "state", "session": "s0"},
            {"type": "step", "session": "s0", "data": {"message": "d"}},
            {"type": "step", "session": "s5", "data": {"message": "e"}},
        ]
        reply = call(ws, {"type": "batch", "id": 2, "messages": messages})
    data = reply["data"]
    assert [d["session"] for d in data] == ["s0", "s1", "s0", "s0", "s0", "s5"]
    assert [d["type"] for d in data] == ["observation"] * 3 + ["state"] + ["observation"] * 2
    assert [d["data"]["observation"]["step"] for i, d in enumerate(data) if i in (0, 2, 4)] == [1, 2, 3]
    assert data[3]["data"]["step_count"] == 2
    assert [data[i]["data"]["observation"]["message"] for i in (0, 1, 2, 4, 5)] == list("abcde")


def test_batch_errors_are_per_item(server):
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "batch", "messages": [{"type": "reset", "session": k} for k in "abc"]})
        reply = call(
            ws,
            {
                "type": "batch",
                "messages": [
                    {"type": "step", "session": "a", "data": {}, "id": "x"},
                    {"type": "step", "session": "zz", "data": {}},
                    {"type": "step", "session": "b", "data": {"fail": "bad"}},
                    {"type": "close", "session": "c"},
                    {"type": "step", "session": "c", "data": {}},
                ],
            },
        )
    data = reply["data"]
    assert data[0]["type"] == "observation"
    assert data[0]["id"] == "x"
    expect_error(data[1], "RESET_REQUIRED")
    assert data[1]["session"] == "zz"
    expect_error(data[2], "EXECUTION_ERROR")
    assert data[3] == {"type": "closed", "session": "c"}
    expect_error(data[4], "RESET_REQUIRED")


def test_batch_runs_different_sessions_concurrently(serve):
    # each step waits at a barrier the other three must reach: it passes only if they overlap
    server = serve(make_env(step_barrier=threading.Barrier(4)))
    keys = ["a", "b", "c", "d"]
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "batch", "messages": [{"type": "reset", "session": k} for k in keys]})
        reply = call(
            ws,
            {
                "type": "batch",
                "messages": [{"type": "step", "session": k, "data": {"message": "meet"}} for k in keys],
            },
            timeout_s=40,
        )
    assert [d["type"] for d in reply["data"]] == ["observation"] * 4, reply


def test_batch_with_an_invalid_item_is_one_validation_error(server):
    with connect(server.ws_url, extended=True) as ws:
        reply = call(
            ws,
            {
                "type": "batch",
                "id": 3,
                "messages": [
                    {"type": "reset", "session": "a"},
                    {"type": "step", "session": "a", "data": {"message": 1}},
                ],
            },
        )
        expect_error(reply, "VALIDATION_ERROR")
        assert reply["id"] == 3
    assert server.tracker.count("reset") == 0


# --- msgpack binary frames ---------------------------------------------------------------------


def test_msgpack_frames_are_answered_in_msgpack_with_raw_bytes(server):
    with connect(server.ws_url, extended=True) as ws:
        reset = call(ws, {"type": "reset", "id": 1, "data": {"seed": 3}}, binary=True)
        step = call(ws, {"type": "step", "id": 2, "data": {"message": "m", "blob_size": 300}}, binary=True)
        state = call(ws, {"type": "state", "id": 3}, binary=True)
        text = call(ws, {"type": "state", "id": 4})  # a text frame is answered with text
    assert reset["data"]["observation"]["seed"] == 3
    blob = step["data"]["observation"]["blob"]
    assert isinstance(blob, bytes)
    assert blob == bytes(i % 256 for i in range(300))
    assert state["data"]["step_count"] == 1
    assert text["id"] == 4


def test_bad_msgpack_frame_is_invalid_json_in_a_binary_reply(server):
    with connect(server.ws_url, extended=True) as ws:
        ws.send(b"\xc1\xc1")
        expect_error(recv(ws, binary=True), "INVALID_JSON")
        assert call(ws, {"type": "reset"}, binary=True)["type"] == "observation"


def test_msgpack_batch(server):
    with connect(server.ws_url, extended=True) as ws:
        reply = call(
            ws,
            {
                "type": "batch",
                "id": 1,
                "messages": [
                    {"type": "reset", "session": "a"},
                    {"type": "step", "session": "a", "data": {"blob_size": 4}},
                ],
            },
            binary=True,
        )
    assert reply["data"][1]["data"]["observation"]["blob"] == b"\x00\x01\x02\x03"


# --- reply models ------------------------------------------------------------------------------


def test_every_reply_kind_validates_against_the_reply_models(server):
    from openenv._protocol import (
        SERVER_MESSAGE,
        BatchReply,
        ClosedReply,
        ErrorReply,
        McpReply,
        ObservationReply,
        StateReply,
    )

    with connect(server.ws_url, extended=True) as ws:
        replies = [
            call(ws, {"type": "reset", "id": 1, "session": "a"}),
            call(ws, {"type": "state", "id": 2, "session": "a"}),
            call(ws, {"type": "step", "id": 3, "session": "nope", "data": {}}),
            call(ws, {"type": "mcp", "id": 4, "data": {"jsonrpc": "2.0", "method": "x", "id": 1}}),
            call(ws, {"type": "batch", "id": 5, "messages": [{"type": "state", "session": "a"}]}),
            call(ws, {"type": "close", "id": 6, "session": "a"}),
        ]
    kinds = [type(SERVER_MESSAGE.validate_python(r)) for r in replies]
    assert kinds == [ObservationReply, StateReply, ErrorReply, McpReply, BatchReply, ClosedReply]
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5, 6]


def test_session_that_starts_a_call_during_a_reap_pass_is_not_reaped(serve):
    # The reaper closes a connection's idle sessions one by one, awaiting each close;
    # a session that starts a call meanwhile must be left alone (and so must its socket).
    gate = threading.Event()
    server = serve(make_env("async", close_gate=gate), idle_timeout_s=0.3)
    with connect(server.ws_url, extended=True) as ws:
        call(ws, {"type": "reset", "session": "a"})
        call(ws, {"type": "reset", "session": "b"})
        wait_until(lambda: server.tracker.count("close-start") == 1, what="the reaper to close 'a'")
        send(ws, {"type": "step", "session": "b", "id": 1, "data": {"sleep_s": 0.3}})
        wait_until(lambda: server.tracker.count("step") == 1, what="b's step to start")
        gate.set()
        reply = recv(ws)
        assert reply["type"] == "observation"
        assert reply["id"] == 1
        assert server.tracker.close_counts() == [1, 0]
        assert call(ws, {"type": "state", "session": "b"})["data"]["step_count"] == 1
    server.wait_closes([1, 1])


def test_a_reply_that_cannot_be_encoded_is_an_error_frame_not_a_dead_socket(serve):
    from typing import Any

    from openenv import Environment, Observation, State

    class Obs(Observation):
        text: str = ""

    class LoneSurrogate(Environment[TAction, Obs, State]):
        execution = Execution.INLINE

        def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
            return Obs()

        def step(self, action: TAction) -> Obs:
            return Obs(text="\ud800" if action.message == "bad" else action.message)

        def state(self) -> State:
            return State()

    server = serve(LoneSurrogate)
    with connect(server.ws_url) as ws:
        call(ws, {"type": "reset"})
        err = call(ws, {"type": "step", "data": {"message": "bad"}})
        assert err["type"] == "error"
        assert err["data"]["code"] == "EXECUTION_ERROR"
        assert "could not be encoded" in err["data"]["message"]
        ok = call(ws, {"type": "step", "data": {"message": "fine"}})
        assert ok["data"]["observation"]["text"] == "fine"


def test_attach_to_an_existing_session_by_id(serve):
    """Upstream 0.10's ``/ws?session_id=ID``: drive a session made over HTTP, one socket
    at a time; the session outlives the socket."""
    server = serve(make_env(execution=Execution.INLINE))
    sid = httpx.post(f"{server.url}/sessions", timeout=10).json()["session_id"]
    url = f"{server.ws_url}?session_id={sid}"
    with connect(url) as ws:
        call(ws, {"type": "reset"})
        assert call(ws, {"type": "step", "data": {"message": "a"}})["data"]["observation"]["step"] == 1
        with connect(url) as second:
            expect_error(recv(second), "SESSION_BUSY")
    assert httpx.get(f"{server.url}/sessions/{sid}/state", timeout=10).json()["step_count"] == 1
    with connect(url) as again:  # the first socket is gone: attach again, same episode
        assert call(again, {"type": "step", "data": {}})["data"]["observation"]["step"] == 2
    assert server.active == 1
    with connect(f"{server.ws_url}?session_id=nope") as ws:
        expect_error(recv(ws), "SESSION_NOT_FOUND")
