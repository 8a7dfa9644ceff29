"""The ``/harness`` WebSocket (RFC 005's production route), over ``HarnessEnvironment``s.

Each connection gets its own env from ``make_env`` (a fresh adapter: one agent each):
connecting resets it (the agent starts) and sends ``{"type": "session_started",
"data": {"session_id", "harness"}}``; each client frame ``{"type": "message",
"content": ...}`` is one turn, streamed back as ``HarnessEvent`` frames ending with
``turn_complete``. A malformed frame gets a ``protocol_error`` (no turn started; the
connection stays usable); a turn past the adapter's ``session_timeout_s``, a harness
that is not running or that fails ends the session with one ``error`` event (no
internals: adapter errors can hold subprocess output). The env is closed on every path.
An env with a ``rubric`` scores each turn as its ``step`` does: ``turn_complete``'s data
gets the rubric's ``reward``, its ``done`` and any ``reward_breakdown`` it gave (a
``terminal_task_env``'s verifier, in the sandbox as in the image).
``max_sessions`` bounds the connections served at once (past it: an ``error`` frame,
code ``CAPACITY_REACHED``). Upstream's frames and messages.

    app = harness_app(lambda: terminal_task_env("claude-code", "count-errors", proxy))

``openenv serve`` mounts it for an env with a harness config (``_endpoint.py``). A
``HarnessStartupError`` making the env is said in the ``error`` frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from .._models import Observation
from ._agentic import (
    HarnessClientMessage,
    HarnessEvent,
    HarnessEventType,
    HarnessProtocolError,
    HarnessStartupError,
    events_to_metadata,
)
from ._harness_env import HarnessAction, HarnessEnvironment

__all__ = ["HarnessEndpoint", "harness_app", "harness_route"]

#: ``make_env(options)``: a fresh env for one connection, ``options`` its query parameters.
MakeEnv = Callable[[dict[str, str]], HarnessEnvironment]


def _error(message: str, code: str) -> str:
    return json.dumps({"type": "error", "data": {"message": message, "code": code}})


def harness_route(make_env: Callable[[], HarnessEnvironment], *, max_sessions: int = 8) -> WebSocketRoute:
    """The ``/harness`` route (see the module doc)."""
    return _route(lambda options: make_env(), max_sessions)


def _route(make_env: MakeEnv, max_sessions: int) -> WebSocketRoute:
    slots = asyncio.Semaphore(max_sessions)

    async def endpoint(ws: WebSocket) -> None:
        await ws.accept()
        if slots.locked():
            await ws.send_text(_error(f"all {max_sessions} harness sessions are in use", "CAPACITY_REACHED"))
            await ws.close()
            return
        async with slots:
            env: HarnessEnvironment | None = None
            try:
                env = make_env(dict(ws.query_params))
                await env.reset()
                started = {"session_id": uuid.uuid4().hex, "harness": env.adapter.config.name}
                await ws.send_text(json.dumps({"type": "session_started", "data": started}))
                while await _turn(ws, env):
                    pass
            except WebSocketDisconnect:
                pass
            except HarnessStartupError as exc:  # ours: what to change (no subprocess output)
                await _say(ws, _error(f"harness session failed: {exc}", "SESSION_ERROR"))
            except Exception:
                await _say(ws, _error("harness session failed", "SESSION_ERROR"))
            finally:
                if env is not None:
                    await env.close()
                with _quiet():
                    await ws.close()

    return WebSocketRoute("/harness", endpoint)


async def _turn(ws: WebSocket, env: HarnessEnvironment) -> bool:
    """Read one frame and serve it; False when the session ends."""
    raw = await ws.receive_text()
    try:
        message = HarnessClientMessage.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as exc:
        code = "INVALID_JSON" if isinstance(exc, json.JSONDecodeError) else "VALIDATION_ERROR"
        await ws.send_text(
            HarnessProtocolError(data={"message": f"invalid message: {exc}", "code": code}).model_dump_json()
        )
        return True
    adapter = env.adapter
    if not await adapter.is_alive():
        await ws.send_text(_event_error("harness process is not running"))
        return False

    async def stream() -> bool:
        last, events = None, list[HarnessEvent]()
        async for event in adapter.send_message_streaming(message.content):
            events.append(event)
            if event.type is HarnessEventType.TURN_COMPLETE and env.rubric is not None:
                event = await _scored(env, message.content, events)
            await ws.send_text(event.model_dump_json())
            last = event.type
        return last is HarnessEventType.TURN_COMPLETE

    timeout = adapter.config.session_timeout_s
    try:
        completed = await asyncio.wait_for(stream(), timeout)
    except TimeoutError:
        await ws.send_text(_event_error(f"harness turn exceeded {timeout} seconds"))
        return False
    except WebSocketDisconnect:
        raise
    except Exception:
        await ws.send_text(_event_error("harness turn failed"))
        return False
    if not completed:
        await ws.send_text(_event_error("harness event stream ended without a TURN_COMPLETE event"))
    return completed


async def _scored(env: HarnessEnvironment, content: str, events: list[HarnessEvent]) -> HarnessEvent:
    """The turn's last event (its ``turn_complete``) with ``env.rubric``'s verdict on the
    turn in its data; the rubric sees the observation ``env.step`` would give it."""
    assert env.rubric is not None
    event = events[-1]
    data = dict(event.data)
    metadata = {"response": data.get("response"), "turn_events": events_to_metadata(events)}
    obs = Observation(done=bool(data.get("done")), reward=0.0, metadata=metadata)
    score = env.rubric(HarnessAction(message=content), obs)
    data["reward"] = float(await score if inspect.isawaitable(score) else score)
    data["done"] = obs.done
    if obs.metadata.get("reward_breakdown") is not None:
        data["reward_breakdown"] = obs.metadata["reward_breakdown"]
    return event.model_copy(update={"data": data})


def _event_error(message: str) -> str:
    return HarnessEvent(
        type=HarnessEventType.ERROR, data={"message": message, "recoverable": False}
    ).model_dump_json()


async def _say(ws: WebSocket, text: str) -> None:
    with _quiet():
        await ws.send_text(text)


class _quiet:
    """Ignore a peer already gone (Starlette raises RuntimeError or WebSocketDisconnect)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        return kind is not None and issubclass(kind, (RuntimeError, WebSocketDisconnect, OSError))


def harness_app(make_env: Callable[[], HarnessEnvironment], *, max_sessions: int = 8) -> Starlette:
    """A Starlette app serving only ``/harness`` (serve it with uvicorn, or mount the route)."""
    return Starlette(routes=[harness_route(make_env, max_sessions=max_sessions)])


class HarnessEndpoint:
    """``/harness`` as a protocol endpoint of an env app (``openenv.server``'s seam);
    ``on_close`` runs when the app stops (what the env's harness config started)."""

    def __init__(self, make_env: MakeEnv, *, max_sessions: int, on_close: Callable[[], Any] | None = None):
        self._route = _route(make_env, max_sessions)
        self._on_close = on_close

    @property
    def routes(self) -> Sequence[BaseRoute]:
        return [self._route]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._on_close is not None:
                await asyncio.to_thread(self._on_close)

    async def ws_message(self, request: Any, session: Any) -> dict[str, Any] | None:
        return None  # /ws frames are the env's
