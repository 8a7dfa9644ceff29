"""OUR clients (``openenv.EnvClient`` and ``AsyncEnvClient``) drive a server built
with upstream OpenEnv 0.10.0's own ``create_app`` (``upstream_side/serve_echo.py``).

Upstream's server selects no WebSocket subprotocol, so our client must fall back to
plain upstream behaviour (``client.extended is False``: no request ids, no session
keys, no batch). Both typed (``echo_env.MODELS``) and generic (dict) clients run a
whole episode; wire errors come back as our typed exceptions.

The upstream server is shared by the whole run (``--max-sessions 2``); every test
closes what it opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from echo_env import MODELS, EchoAction, EchoObservation, EchoState

from openenv import (
    AsyncEnvClient,
    CapacityReached,
    ConnectionClosed,
    EnvClient,
    OpenEnvError,
    StepResult,
    ValidationFailed,
    WireError,
)

pytestmark = pytest.mark.upstream

READY = "Echo environment ready!"
MESSAGES = ["a", "hello", "", "0123456789"]
TIMEOUT_S = 10.0


@pytest.fixture
def upstream(upstream_server: Any) -> Any:
    """The shared upstream server (``--max-sessions 2``)."""
    return upstream_server


def _check_typed_reset(res: StepResult[Any]) -> None:
    assert isinstance(res.observation, EchoObservation)
    assert res.observation.echoed_message == READY
    assert res.observation.message_length == 0
    assert res.observation.reward == 0.0
    assert res.observation.done is False
    assert res.reward == 0.0
    assert (res.done, res.terminated, res.truncated) == (False, False, False)


def _check_typed_step(res: StepResult[Any], text: str) -> None:
    assert isinstance(res.observation, EchoObservation)
    assert res.observation.echoed_message == text
    assert res.observation.message_length == len(text)
    assert res.reward == len(text) * 0.1
    assert res.observation.reward == res.reward
    assert (res.done, res.terminated, res.truncated) == (False, False, False)
    assert res.metadata == {}


def _check_generic_step(res: StepResult[Any], text: str) -> None:
    # The observation dict is exactly what upstream put on the wire.
    assert res.observation == {"metadata": {}, "echoed_message": text, "message_length": len(text)}
    assert res.reward == len(text) * 0.1
    assert res.done is False


def _check_typed_state(state: Any, episode_id: str) -> None:
    assert isinstance(state, EchoState)
    assert state.episode_id == episode_id
    assert state.step_count == len(MESSAGES)


# --- episodes -----------------------------------------------------------------------------------


def test_sync_typed_episode(upstream: Any) -> None:
    with EnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) as env:
        assert env.extended is False  # upstream selected no subprotocol
        _check_typed_reset(env.reset(seed=42, episode_id="ep-sync-typed"))
        for text in MESSAGES:
            _check_typed_step(env.step(EchoAction(message=text)), text)
        _check_typed_state(env.state(), "ep-sync-typed")


def test_sync_generic_episode(upstream: Any) -> None:
    with EnvClient(upstream.url, timeout_s=TIMEOUT_S) as env:
        assert env.extended is False
        res = env.reset(seed=7)
        assert res.observation == {"metadata": {}, "echoed_message": READY, "message_length": 0}
        assert (res.reward, res.done) == (0.0, False)
        for text in MESSAGES:
            _check_generic_step(env.step({"message": text}), text)
        state = env.state()
        assert state == {"episode_id": state["episode_id"], "step_count": len(MESSAGES)}
        assert isinstance(state["episode_id"], str)
        # A second episode on the same connection.
        env.reset(episode_id="second")
        assert env.state() == {"episode_id": "second", "step_count": 0}


async def test_async_typed_episode(upstream: Any) -> None:
    async with AsyncEnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) as env:
        assert env.extended is False
        _check_typed_reset(await env.reset(seed=42, episode_id="ep-async-typed"))
        for text in MESSAGES:
            _check_typed_step(await env.step(EchoAction(message=text)), text)
        _check_typed_state(await env.state(), "ep-async-typed")


async def test_async_generic_episode(upstream: Any) -> None:
    async with AsyncEnvClient(upstream.url, timeout_s=TIMEOUT_S) as env:
        assert env.extended is False
        res = await env.reset(seed=3, episode_id="ep-async-generic")
        assert res.observation["echoed_message"] == READY
        for text in MESSAGES:
            _check_generic_step(await env.step({"message": text}), text)
        assert await env.state() == {"episode_id": "ep-async-generic", "step_count": len(MESSAGES)}


def test_reset_options_reach_upstream_without_error(upstream: Any) -> None:
    """Extra reset keywords travel in ``data`` (our options); upstream filters them
    by its env's ``reset`` signature and answers normally."""
    with EnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) as env:
        _check_typed_reset(env.reset(seed=1, max_steps=5, split="test"))


def test_close_ends_the_session(upstream: Any, interop: SimpleNamespace) -> None:
    """``close()`` frees the upstream slot: fill both slots, close, and open two more."""
    for _ in range(2):
        clients = [EnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) for _ in range(upstream.max_sessions)]
        try:
            for env in clients:
                _check_typed_reset(env.reset())
        finally:
            for env in clients:
                env.close()
        interop.wait_upstream_slots_free(upstream)


def test_plain_connection_refuses_extensions(upstream: Any) -> None:
    """Named sessions and batch need ``openenv.v1``; against upstream they fail on our
    side before anything is sent, and the connection stays usable."""
    with EnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) as env:
        env.reset()
        with pytest.raises(OpenEnvError, match=r"openenv\.v1"):
            env.reset(session="a")
        with pytest.raises(OpenEnvError, match=r"openenv\.v1"):
            env.step_batch({"a": EchoAction(message="x")})
        _check_typed_step(env.step(EchoAction(message="ok")), "ok")


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "loc", "kind"),
    [
        ({"message": 5}, ["message"], "string_type"),
        ({"message": "x", "extra": 1}, ["extra"], "extra_forbidden"),
        ({}, ["message"], "missing"),
    ],
)
def test_invalid_action_raises_validation_failed_sync(
    upstream: Any, action: dict[str, Any], loc: list[str], kind: str
) -> None:
    """Upstream's VALIDATION_ERROR frame becomes ``ValidationFailed`` with its
    ``errors`` (``loc`` relative to the action); the socket stays open."""
    with EnvClient(upstream.url, timeout_s=TIMEOUT_S) as env:
        env.reset()
        with pytest.raises(ValidationFailed) as info:
            env.step(action)
        err = info.value
        assert err.code == "VALIDATION_ERROR"
        assert err.message == "Invalid message"  # upstream's text
        errors = err.details["errors"]
        assert errors[0]["loc"] == loc
        assert errors[0]["type"] == kind
        _check_generic_step(env.step({"message": "after"}), "after")
        assert env.state()["step_count"] == 1


async def test_invalid_action_raises_validation_failed_async(upstream: Any) -> None:
    async with AsyncEnvClient(upstream.url, timeout_s=TIMEOUT_S) as env:
        await env.reset()
        with pytest.raises(ValidationFailed) as info:
            await env.step({"message": 5})
        assert info.value.details["errors"][0]["loc"] == ["message"]
        _check_generic_step(await env.step({"message": "after"}), "after")


# --- capacity ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def _hold_all_slots(upstream: Any, interop: SimpleNamespace) -> Iterator[list[EnvClient[Any, Any, Any]]]:
    interop.wait_upstream_slots_free(upstream)  # earlier tests' sockets are gone
    holders = [EnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) for _ in range(upstream.max_sessions)]
    try:
        for env in holders:
            env.reset()
        yield holders
    finally:
        for env in holders:
            env.close()
        interop.wait_upstream_slots_free(upstream)


def _check_capacity(err: BaseException, max_sessions: int) -> None:
    assert isinstance(err, CapacityReached), f"expected CapacityReached, got {err!r}"
    assert not isinstance(err, RuntimeError)
    assert isinstance(err, WireError)
    assert err.code == "CAPACITY_REACHED"
    assert err.details == {"active_sessions": max_sessions, "max_sessions": max_sessions}
    assert err.message == (
        f"Server at capacity: {max_sessions}/{max_sessions} sessions active. "
        "Cannot accept new connections."
    )


# Upstream sends CAPACITY_REACHED unsolicited right after accepting the socket, then
# closes it (1000). Whether the client's first send happens before or after that close
# arrives is a race, so each way is forced: "now" sends at once, "late" waits first.
ATTEMPTS = [("now", 0.0)] * 3 + [("late", 0.3)] * 3


def test_capacity_reached_sync(upstream: Any, interop: SimpleNamespace) -> None:
    """At capacity our sync client raises ``CapacityReached`` (a typed ``WireError``,
    not a ``RuntimeError`` and not a bare ``ConnectionClosed``), whenever it reads."""
    with _hold_all_slots(upstream, interop):
        outcomes = []
        for label, delay in ATTEMPTS:
            env = EnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S)
            env.connect()  # the handshake succeeds (101): upstream refuses after accept
            time.sleep(delay)
            try:
                env.reset()
                outcomes.append((label, None))
            except BaseException as exc:
                outcomes.append((label, exc))
            finally:
                env.close()
        for label, exc in outcomes:
            assert exc is not None, f"{label}: reset succeeded at capacity"
            assert not isinstance(exc, ConnectionClosed), f"{label}: {exc!r} lost the error frame"
            _check_capacity(exc, upstream.max_sessions)
    # A slot is free again: a new client works.
    with EnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) as env:
        _check_typed_reset(env.reset())


async def test_capacity_reached_async(upstream: Any, interop: SimpleNamespace) -> None:
    """The same with ``AsyncEnvClient`` (its socket is read in the background, so the
    close has usually arrived before the first send)."""
    with _hold_all_slots(upstream, interop):  # sync holders: blocking briefly is fine here
        outcomes = []
        for label, delay in ATTEMPTS:
            env = AsyncEnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S)
            await env.connect()
            await asyncio.sleep(delay)
            try:
                await env.reset()
                outcomes.append((label, None))
            except BaseException as exc:
                outcomes.append((label, exc))
            finally:
                await env.close()
        for label, exc in outcomes:
            assert exc is not None, f"{label}: reset succeeded at capacity"
            assert not isinstance(exc, ConnectionClosed), f"{label}: {exc!r} lost the error frame"
            _check_capacity(exc, upstream.max_sessions)
    async with AsyncEnvClient(upstream.url, MODELS, timeout_s=TIMEOUT_S) as env:
        _check_typed_reset(await env.reset())
