"""Sessions: one env instance each, a lifecycle, a slot, and idle reaping.

A session is owned by a WebSocket connection (closed with it) or by nobody (an HTTP
session, closed by ``DELETE`` or by the reaper). The reaper never leaves a socket
open on a reaped session: it asks the owner to close the socket.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from enum import Enum
from typing import Any, Protocol

from pydantic import ValidationError

from .._exceptions import (
    CapacityReached,
    DeadlineExceeded,
    ExecutionError,
    FactoryError,
    QuotaExceeded,
    ResetRequired,
    SessionBusy,
    SessionClosed,
    SessionNotFound,
    WireError,
)
from .._models import Observation, State
from .._protocol import ResetData, validation_failed
from ._admission import peer
from ._runner import EnvHandle, EnvRunner

log = logging.getLogger("openenv.server")

#: Upstream's MCP tool steps: they need no episode and end none, as on upstream's server
#: (its ``HarborEnv`` calls ``run_rollout`` with no reset before).
TOOL_STEPS = frozenset({"call_tool", "list_tools"})


@functools.cache
def _tool_model(cls: type) -> bool:
    field = (getattr(cls, "model_fields", None) or {}).get("type")
    return field is not None and field.default in TOOL_STEPS


def is_tool_step(action: Any) -> bool:
    """Whether ``action`` is a ``call_tool`` / ``list_tools`` action (one lookup per step)."""
    return _tool_model(type(action))  # type: ignore[arg-type]  # a class is hashable


class SessionState(Enum):
    """``READY`` until the first reset, then ``ACTIVE``; ``CLOSED`` is final."""

    READY = "ready"
    ACTIVE = "active"
    CLOSED = "closed"


class Owner(Protocol):
    """What owns sessions and can be told to shut down (a WebSocket connection)."""

    async def reap(self, sessions: list[Session], reason: str) -> None:
        """Close these idle sessions; close the socket if nothing live is left on it."""


class Session:
    """One env instance and its lifecycle. One call at a time: a call that arrives while
    another runs is refused with ``SessionBusy`` (nothing applied)."""

    __slots__ = (
        "_close_after_call",
        "_handle",
        "busy",
        "client",
        "closed_reason",
        "episode_over",
        "id",
        "last_active",
        "manager",
        "owner",
        "state",
    )

    def __init__(self, manager: SessionManager, handle: EnvHandle, owner: Owner | None) -> None:
        self.id = uuid.uuid4().hex
        self.manager = manager
        self._handle = handle
        self.owner = owner
        self.state = SessionState.READY
        self.last_active = time.monotonic()
        #: The call running now (``"step"``, ...), or None.
        self.busy: str | None = None
        #: The last observation said ``done``: a step now needs a reset first.
        self.episode_over = False
        self.closed_reason = ""
        self._close_after_call = False
        #: The peer address charged for this session under a per-client quota, or None.
        self.client: str | None = None

    def is_idle(self) -> bool:
        """No request for longer than the manager's idle timeout, or stuck in one call
        for longer than that plus the call's deadline (a dead session)."""
        quiet = time.monotonic() - self.last_active
        manager = self.manager
        if self.busy is None:
            return quiet > manager.idle_timeout_s
        runner = manager.runner
        # An overrun waits up to a grace for interrupt() to return and one more for the call.
        return quiet > manager.idle_timeout_s + (runner.call_timeout_s or 0) + 2 * runner.interrupt_grace_s

    def _check(self, need_reset: bool) -> None:
        if self.state is SessionState.CLOSED:
            raise SessionClosed(
                f"session {self.id} is closed ({self.closed_reason})", reason=self.closed_reason
            )
        if need_reset and self.state is SessionState.READY:
            raise ResetRequired(f"session {self.id} has no episode yet: call reset before step or state")

    async def _run(self, what: str, timeout_s: float | None, /, *args: Any, **kwargs: Any) -> Any:
        if self.busy is not None:
            raise SessionBusy(
                f"session {self.id} is still running a {self.busy} call; this {what} request was "
                "refused and not applied (one call at a time per session): retry when it ends",
                busy_with=self.busy,
                applied=False,
            )
        self.busy = what
        self.last_active = time.monotonic()
        try:
            return await self._handle.call(what, self.manager.runner.deadline(timeout_s), *args, **kwargs)
        except DeadlineExceeded as err:
            if err.details.get("session_closed"):
                await self.close(f"{what} overran its deadline and could not be interrupted")
            raise
        except SessionClosed as err:
            # The env itself ended the session (a crashed browser, say): free the slot now.
            await self.close(f"the env ended it in {what}: {err.message}")
            raise
        except WireError:
            raise
        except Exception as exc:
            log.warning("env %s raised in %s", type(self._handle.env).__name__, what, exc_info=True)
            raise ExecutionError(
                f"{what} failed: {type(exc).__name__}: {exc}", exception=type(exc).__name__
            ) from exc
        finally:
            self.busy = None
            self.last_active = time.monotonic()
            if self._close_after_call:
                self._close_after_call = False
                await self.manager._close_env(self._handle)

    async def reset(self, data: ResetData, timeout_s: float | None = None) -> Observation:
        self._check(need_reset=False)
        options: Any = data.model_extra or None
        model = self.manager.runner.env_class.reset_options_model
        if model is not None:
            try:
                options = model.model_validate(options or {})
            except ValidationError as exc:
                raise validation_failed(exc, "reset options") from None
        obs = await self._run("reset", timeout_s, seed=data.seed, episode_id=data.episode_id, options=options)
        self._expect(obs, "reset")
        self.state = SessionState.ACTIVE
        self.episode_over = obs.done
        return obs  # type: ignore[no-any-return]

    async def step(self, action: Any, timeout_s: float | None = None) -> Observation:
        tool = is_tool_step(action)
        if tool:
            self._check(need_reset=False)
        elif self.state is not SessionState.ACTIVE or self.episode_over:
            self._check(need_reset=True)
            if self.episode_over:
                raise ResetRequired(
                    "the episode is over (the last observation had done=true): call reset to "
                    "start a new one",
                    episode_over=True,
                )
        runner = self.manager.runner
        if timeout_s is not None and runner.step_takes_deadline:
            # The env owns the step's deadline (it answers by then with what it has: a
            # timed-out command is an observation); the server bounds the call as one
            # without a deadline of its own, or the request's plus a grace for wrapping up.
            bound = runner.owned_deadline_bound(timeout_s)
            obs = await self._run("step", bound, action, timeout_s=min(timeout_s, runner.max_call_timeout_s))
        else:
            obs = await self._run("step", timeout_s, action)
        self._expect(obs, "step")
        self.episode_over = self.episode_over if tool else obs.done
        return obs  # type: ignore[no-any-return]

    async def get_state(self, timeout_s: float | None = None) -> State:
        self._check(need_reset=True)
        state = await self._run("state", timeout_s)
        if not isinstance(state, State):
            raise ExecutionError(f"state() returned {type(state).__name__}, not a State model")
        return state

    def _expect(self, obs: Any, what: str) -> None:
        if not isinstance(obs, Observation):
            raise ExecutionError(f"{what}() returned {type(obs).__name__}, not an Observation model")

    async def close(self, reason: str = "closed by client") -> None:
        """Close the env and free the slot. Idempotent. A call still running on a thread
        finishes first; the slot is free at once."""
        if self.state is SessionState.CLOSED:
            return
        self.state = SessionState.CLOSED
        self.closed_reason = reason
        self.manager._release(self)
        if self.busy is not None:
            self._close_after_call = True  # never close an env under a running call
            return
        await self.manager._close_env(self._handle)


class SessionManager:
    """Admits sessions up to a limit (and up to ``max_per_client`` for each peer address,
    when set), finds HTTP sessions by id, reaps idle ones."""

    def __init__(
        self, runner: EnvRunner, max_sessions: int, idle_timeout_s: float, max_per_client: int = 0
    ) -> None:
        limit = runner.env_class.max_sessions
        self.runner = runner
        self.max_sessions = min(max_sessions, limit) if limit else max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.max_per_client = max_per_client
        #: sessions (open or being built) per peer address, when there is a quota
        self.per_client: dict[str, int] = {}
        self.sessions: dict[str, Session] = {}
        #: open WebSocket connections (``_ws.Connection``), for the reaper
        self.connections: set[Any] = set()
        self._pending = 0
        self._closing: set[asyncio.Future[None]] = set()
        self._reaper: asyncio.Task[None] | None = None

    @property
    def active(self) -> int:
        return len(self.sessions) + self._pending

    async def open(self, owner: Owner | None, client: str | None = None) -> Session:
        """Reserve a slot, then build the env. Raises CapacityReached, QuotaExceeded
        (``client``, by default the caller's peer address, holds its quota) or FactoryError."""
        if self.active >= self.max_sessions:
            raise CapacityReached(
                f"Server at capacity: {self.active}/{self.max_sessions} sessions active. "
                "Cannot accept new connections.",
                active_sessions=self.active,
                max_sessions=self.max_sessions,
            )
        if self.max_per_client:
            client = client or peer.get()
            self._charge(client)
        self._pending += 1  # reserved before any await: no over-admission
        try:
            handle = await self.runner.open()
        except Exception as exc:
            self._refund(client)
            log.warning("constructing %s failed", self.runner.env_class.__name__, exc_info=True)
            raise FactoryError(
                f"could not construct {self.runner.env_class.__name__}: {type(exc).__name__}: {exc}",
                factory_name=self.runner.env_class.__name__,
            ) from exc
        finally:
            self._pending -= 1
        session = Session(self, handle, owner)
        session.client = client if self.max_per_client else None
        self.sessions[session.id] = session
        return session

    def _charge(self, client: str | None) -> None:
        if client is None:  # no address (an in-process transport): no quota to count against
            return
        held = self.per_client.get(client, 0)
        if held >= self.max_per_client:
            raise QuotaExceeded(
                f"client {client} already holds {held} sessions, its quota on this server: "
                "close one (or ask for a higher max_sessions_per_client)",
                client=client,
                max_sessions_per_client=self.max_per_client,
            )
        self.per_client[client] = held + 1

    def _refund(self, client: str | None) -> None:
        if client is None or client not in self.per_client:
            return
        left = self.per_client[client] - 1
        if left:
            self.per_client[client] = left
        else:
            del self.per_client[client]

    def get(self, session_id: str) -> Session:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise SessionNotFound(
                f"no session with id {session_id!r}: it was closed, reaped after idling, or never opened",
                session_id=session_id,
            ) from None

    def _release(self, session: Session) -> None:
        if self.sessions.pop(session.id, None) is not None and session.client is not None:
            self._refund(session.client)

    async def _close_env(self, handle: EnvHandle) -> None:
        """Close one env in a task of its own: a cancelled caller (a connection going
        away) never skips ``env.close()``, and shutdown waits for closes in flight."""
        task = asyncio.ensure_future(handle.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
        await asyncio.shield(task)

    def stats(self) -> dict[str, Any]:
        return {"active_sessions": self.active, "max_sessions": self.max_sessions}

    # --- reaping ------------------------------------------------------------------

    def start(self) -> None:
        if self.idle_timeout_s > 0 and self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_loop(), name="openenv-reaper")

    async def _reap_loop(self) -> None:
        interval = min(max(self.idle_timeout_s / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reap_idle()
            except Exception:
                log.exception("reaper pass failed")

    async def reap_idle(self) -> int:
        """Close every session idle past the timeout, and every WebSocket that has held
        no live session for as long; returns how many sessions."""
        now = time.monotonic()
        for conn in [c for c in self.connections if c.idle_without_session(now, self.idle_timeout_s)]:
            await conn.close_idle("idle timeout (no session)")
        idle = [s for s in self.sessions.values() if s.is_idle()]
        by_owner: dict[int, tuple[Owner, list[Session]]] = {}
        for session in idle:
            if session.owner is None:
                if session.is_idle():  # re-checked: it may have started a call during an earlier close
                    await session.close("idle timeout")
            else:
                by_owner.setdefault(id(session.owner), (session.owner, []))[1].append(session)
        for owner, sessions in by_owner.values():
            await owner.reap(sessions, "idle timeout")
        return len(idle)

    async def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        for session in list(self.sessions.values()):
            await session.close("server shutdown")
        if self._closing:  # closes started by connections that went away just before
            await asyncio.wait(self._closing, timeout=10)
        await self.runner.stop()
