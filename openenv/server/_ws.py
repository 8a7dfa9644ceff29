"""The ``/ws`` loop: receive a frame, parse it once, dispatch, reply. Nothing else.

A plain connection (no subprotocol) behaves exactly like upstream OpenEnv: one session
built at connect, a capacity error sent after accept and then the socket closed,
``close`` answered by closing the socket. A connection that negotiated ``openenv.v1``
also gets request ids, several named sessions, ``batch`` and msgpack frames.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter
from starlette.websockets import WebSocket, WebSocketState

from .._exceptions import (
    MAX_FRAME_HEADER,
    CapacityReached,
    ExecutionError,
    ResetRequired,
    SessionBusy,
    SessionClosed,
    WireError,
)
from .._protocol import (
    BatchMessage,
    CloseMessage,
    McpMessage,
    ResetMessage,
    StateMessage,
    StepMessage,
    decode_request,
    encode,
    error_message,
    observation_data,
    salvage_request_id,
)
from .._types import SUBPROTOCOL
from ._jsonrpc import mcp_not_supported
from ._mounts import Mounts
from ._sessions import Session, SessionManager, SessionState, is_tool_step

if TYPE_CHECKING:
    from ._direct import DirectChannel

log = logging.getLogger("openenv.server")

#: Close codes we send (4000-4999 are application codes).
CLOSE_NORMAL = 1000
CLOSE_CAPACITY = 1013  # "try again later"
CLOSE_IDLE = 4408
#: Requests one extended connection may have running at once; more wait to be read.
MAX_IN_FLIGHT = 256


class Connection:
    """One WebSocket and the sessions it owns."""

    def __init__(
        self,
        ws: WebSocket,
        manager: SessionManager,
        adapter: TypeAdapter[Any],
        extended: bool,
        mcp: Mounts | None = None,
        attach: str | None = None,
    ) -> None:
        self.ws = ws
        self.manager = manager
        self.adapter = adapter
        self.extended = extended
        self.mcp = mcp
        #: ``/ws?session_id=ID``: drive an existing HTTP/MCP session (upstream 0.10's
        #: attach) without owning it: it outlives this socket.
        self.attach = attach
        self._attached: Session | None = None
        self.sessions: dict[str | None, Session] = {}
        self.closing = False
        # Extended connections to envs whose calls can suspend handle each frame in its
        # own task, so a request for a busy session is answered at once (SESSION_BUSY).
        self.concurrent = extended and not manager.runner.always_inline
        self._tasks: set[asyncio.Task[None]] = set()
        self._opening: set[str | None] = set()
        #: when this socket last showed life without a session: connected, or an MCP call
        self.active_at = time.monotonic()
        #: uvicorn's protocol hands messages straight to this loop where it can (_direct.py)
        self.direct: DirectChannel | None = (ws.scope.get("extensions") or {}).get("openenv.direct")
        if self.direct is not None:
            self.direct.enable()

    # --- lifecycle ----------------------------------------------------------------

    async def run(self) -> None:
        ws = self.ws
        if self.attach is not None:
            try:
                self._attached = self.sessions[None] = self._attach(self.attach)
            except WireError as err:
                await self._send(error_message(err, None, None), False)
                await self._close_socket(CLOSE_NORMAL)
                return
        elif not self.extended:
            try:
                self.sessions[None] = await self.manager.open(self)
            except WireError as err:
                await self._send(error_message(err, None, None), False)
                await self._close_socket(CLOSE_CAPACITY if isinstance(err, CapacityReached) else CLOSE_NORMAL)
                return
        concurrent = self.concurrent
        direct = self.direct
        receive = ws.receive
        self.manager.connections.add(self)  # the reaper closes it if it idles with no session
        try:
            while not self.closing:
                if direct is not None:
                    got = await direct.recv()
                    if got is None:
                        break
                    frame, binary = got, not isinstance(got, str)
                else:
                    message = await receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    text = message.get("text")
                    frame, binary = (text, False) if text is not None else (message["bytes"], True)
                if concurrent:
                    await self._spawn(frame, binary)
                    continue
                reply = await self.handle(frame, binary)
                if reply is not None and not await self._send(reply, binary):
                    break
        except Exception:
            # A disconnect surfacing as an exception, or a bug: either way this
            # connection ends here and only here.
            log.debug("connection loop ended by an exception", exc_info=True)
        finally:
            self.manager.connections.discard(self)
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.wait(self._tasks, timeout=5.0)
            await self.close_sessions("connection closed")
            await self._close_socket(CLOSE_NORMAL)

    async def _spawn(self, frame: str | bytes, binary: bool) -> None:
        if len(self._tasks) >= MAX_IN_FLIGHT:
            await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)
        task = asyncio.create_task(self._answer(frame, binary))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, frame: str | bytes, binary: bool) -> None:
        reply = await self.handle(frame, binary)
        if reply is not None and not await self._send(reply, binary):
            await self._close_socket(CLOSE_NORMAL)

    async def _send(self, reply: dict[str, Any], binary: bool) -> bool:
        try:
            frame = encode(reply, binary)
        except Exception as exc:  # e.g. a lone surrogate in a str, an object orjson cannot encode
            log.warning("a %s reply could not be encoded", reply.get("type"), exc_info=True)
            err = ExecutionError(
                f"the env's {reply.get('type')} reply could not be encoded: {type(exc).__name__}: {exc}"
            )
            frame = encode(error_message(err, reply.get("id"), reply.get("session")), binary)
        direct = self.direct
        if direct is not None:
            return await direct.send(frame)
        try:
            if binary:
                await self.ws.send({"type": "websocket.send", "bytes": frame})
            else:
                await self.ws.send({"type": "websocket.send", "text": frame})
        except Exception:
            return False
        return True

    async def _close_socket(self, code: int, reason: str = "") -> None:
        self.closing = True
        if self.direct is not None and self.direct.closed:
            return  # the peer is gone or closed first (uvicorn answered its close frame)
        if self.ws.application_state is WebSocketState.CONNECTED:
            try:
                await self.ws.close(code, reason)
            except Exception:
                log.debug("closing socket failed", exc_info=True)

    def _attach(self, session_id: str) -> Session:
        session = self.manager.get(session_id)
        if session.owner is not None:
            raise SessionBusy(
                f"session {session_id!r} is already attached to another socket (one at a time)",
                applied=False,
            )
        session.owner = self
        return session

    async def close_sessions(self, reason: str) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            if session is self._attached:
                session.owner = None  # detached: whoever created it closes it
                continue
            await session.close(reason)

    def idle_without_session(self, now: float, limit_s: float) -> bool:
        """No live session, and nothing from one (nor an MCP call) for ``limit_s``."""
        if self.closing:
            return False
        last = self.active_at
        for session in self.sessions.values():
            if session.state is not SessionState.CLOSED:
                return False  # the session reaper's to judge
            last = max(last, session.last_active)
        return now - last > limit_s

    async def close_idle(self, reason: str) -> None:
        await self.close_sessions(reason)
        await self._close_socket(CLOSE_IDLE, reason)

    async def reap(self, sessions: list[Session], reason: str) -> None:
        for session in sessions:
            if session.is_idle():  # re-checked: it may have started a call during an earlier close
                await session.close(reason)
        if all(s.state is SessionState.CLOSED for s in self.sessions.values()):
            await self.close_sessions(reason)
            await self._close_socket(CLOSE_IDLE, reason)

    # --- dispatch -----------------------------------------------------------------

    async def handle(self, frame: str | bytes, binary: bool) -> dict[str, Any] | None:
        """Answer one frame; returns the reply (None when there is none to send)."""
        try:
            msg = decode_request(self.adapter, frame, binary)
        except WireError as err:
            salvage = self.extended and "max_values" not in err.details
            rid, key = salvage_request_id(frame, binary) if salvage else (None, None)
            return error_message(err, rid, key)
        if isinstance(msg, BatchMessage):
            replies = await self._batch(msg.messages, binary, msg.timeout_s)
            return self._tag({"type": "batch", "data": replies}, msg.id, None)
        return await self._answer_request(msg, binary)

    async def _answer_request(self, msg: Any, binary: bool) -> dict[str, Any] | None:
        key = msg.session
        try:
            if isinstance(msg, StepMessage):
                if key not in self.sessions and is_tool_step(msg.data):  # needs no reset first
                    await self._open(key)
                obs = await self._session(key).step(msg.data, msg.timeout_s)
                reply: dict[str, Any] = {
                    "type": "observation",
                    "data": observation_data(obs, binary, self.extended),
                }
            elif isinstance(msg, ResetMessage):
                session = self.sessions.get(key)
                if session is None or session.state is SessionState.CLOSED:
                    session = await self._open(key)
                obs = await session.reset(msg.data, msg.timeout_s)
                reply = {"type": "observation", "data": observation_data(obs, binary, self.extended)}
            elif isinstance(msg, StateMessage):
                state = await self._session(key).get_state(msg.timeout_s)
                reply = {"type": "state", "data": state.model_dump(mode="python" if binary else "json")}
            elif isinstance(msg, CloseMessage):
                return await self._close_one(key, msg.id)
            elif isinstance(msg, McpMessage):
                self.active_at = time.monotonic()
                session = self.sessions.get(key)
                data = (
                    mcp_not_supported(msg.data)
                    if self.mcp is None
                    else await self.mcp.ws_message(msg.data, session)
                )
                reply = {"type": "mcp", "data": data}
            else:  # pragma: no cover - the adapter admits nothing else
                raise ExecutionError(f"unhandled message {type(msg).__name__}")
        except WireError as err:
            return error_message(err, msg.id, key)
        except Exception as exc:  # a bug in the runtime, never the env (Session wraps those)
            log.exception("internal error handling %s", msg.type)
            return error_message(ExecutionError(f"internal server error: {exc}"), msg.id, key)
        return self._tag(reply, msg.id, key)

    def _tag(self, reply: dict[str, Any], rid: Any, key: str | None) -> dict[str, Any]:
        if rid is not None:
            reply["id"] = rid
        if key is not None:
            reply["session"] = key
        return reply

    async def _open(self, key: str | None) -> Session:
        if key in self._opening:
            raise SessionBusy(
                f"{_name(key)} is still being opened; this reset was refused and not applied", applied=False
            )
        self._opening.add(key)
        try:
            session = self.sessions[key] = await self.manager.open(self)
        finally:
            self._opening.discard(key)
        return session

    def _session(self, key: str | None) -> Session:
        session = self.sessions.get(key)
        if session is None:
            if key is None and not self.extended:
                raise SessionClosed("the session of this connection is closed")
            raise ResetRequired(f"{_name(key)} has no episode yet: call reset before step or state")
        return session

    async def _close_one(self, key: str | None, rid: Any) -> dict[str, Any] | None:
        session = self.sessions.pop(key, None)
        if session is not None:
            await session.close("closed by client")
        if key is None and not self.extended:
            # Upstream: no reply, the server closes the socket.
            await self.close_sessions("closed by client")
            await self._close_socket(CLOSE_NORMAL)
            return None
        return self._tag({"type": "closed"}, rid, key) if rid is not None or key is not None else None

    async def _batch(
        self, messages: list[Any], binary: bool, default_timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """Run each session's requests in order, different sessions concurrently; each
        item under its own deadline (its ``timeout_s``, else the batch's)."""
        groups: dict[str | None, list[int]] = {}
        for i, m in enumerate(messages):
            groups.setdefault(m.session, []).append(i)
        replies: list[dict[str, Any]] = [{}] * len(messages)

        async def run_group(indices: list[int]) -> None:
            for i in indices:
                m = messages[i]
                if m.timeout_s is None and default_timeout is not None:
                    m.timeout_s = default_timeout
                reply = await self._answer_request(m, binary)
                replies[i] = reply if reply is not None else self._tag({"type": "closed"}, m.id, m.session)

        if len(groups) == 1 or self.manager.runner.always_inline:
            # INLINE envs never suspend: one pass in order costs no task per session.
            for indices in groups.values():
                await run_group(indices)
        else:
            await asyncio.gather(*(run_group(ix) for ix in groups.values()))
        return replies


def _name(key: str | None) -> str:
    return "the default session" if key is None else f"session {key!r}"


def make_ws_endpoint(
    manager: SessionManager, adapter: TypeAdapter[Any], mcp: Mounts | None = None, max_frame_bytes: int = 0
) -> Any:
    headers = [(MAX_FRAME_HEADER.encode(), str(max_frame_bytes).encode())] if max_frame_bytes else None

    async def ws_endpoint(websocket: WebSocket) -> None:
        extended = SUBPROTOCOL in websocket.scope.get("subprotocols", ())
        await websocket.accept(subprotocol=SUBPROTOCOL if extended else None, headers=headers)
        attach = websocket.query_params.get("session_id")
        conn = Connection(websocket, manager, adapter, extended, mcp, attach)
        started = time.monotonic()
        await conn.run()
        log.debug("connection closed after %.1f s", time.monotonic() - started)

    return ws_endpoint
