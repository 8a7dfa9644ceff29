"""An env class served as an MCP server (the official SDK's low-level ``Server``).

Agents see one tool per action; reset and state are never tools. Each MCP session
drives one env session, opened from the server's ``SessionManager`` and reset when the
MCP session starts; the model sees the first observation:

* an ``initialize`` session (the 2025 protocol, over streamable HTTP or stdio) owns one
  env session, reset during ``initialize`` (its ``instructions`` carry the first
  observation) and closed when the connection ends (``DELETE``, the SDK's idle
  timeout, server shutdown, end of stdin);
* the sessionless 2026-07-28 protocol has no connection, so the episode travels in a
  handle (MCP's recommended pattern): every tool takes an optional ``session_id``; a
  call without one starts an episode and its result carries the new ``session_id`` and
  the first observation (``reset_observation``). Handles are the env server's session
  ids, closed by its idle reaper;
* ``scope="process"`` (``openenv mcp`` over stdio): one env session for the process,
  reset by ``start()`` before serving (the server's instructions carry the first
  observation, for both protocols).

Reset options come from, in order of precedence: the request's ``_meta["openenv/reset"]``
(or the ``initialize`` request's), the endpoint URL's query string
(``/mcp?seed=1&max_steps=5``), and the configured defaults.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

import mcp_types as mt
import orjson
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from .._env import EnvClass
from .._exceptions import ResetRequired, SessionNotFound, ValidationFailed, WireError
from .._protocol import ResetData
from ..server._sessions import Session, SessionManager, SessionState
from ._tools import ActionTools, UnknownTool, error_result, observation_result

RESET_META_KEY = "openenv/reset"
SESSION_ARG = "session_id"
#: Key of the first result of a sessionless episode holding its reset observation.
RESET_RESULT_KEY = "reset_observation"
_SESSION_PROPERTY = {
    "type": "string",
    "description": "The episode to continue: the session_id returned by this episode's first call. "
    "Omit it to start a new episode.",
}
_STATE_KEY = "openenv.session"
_LOCK_KEY = "openenv.lock"

Scope = Literal["connection", "process"]


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    # The low-level context does not expose its Connection yet (SDK TODO "Context
    # rework"); the per-request ServerSession holds it.
    conn = getattr(ctx.session, "_connection", None)
    if not isinstance(conn, Connection):  # pragma: no cover - guards an SDK change
        raise RuntimeError("this mcp SDK version does not expose the connection; pin mcp>=2.3,<3")
    return conn


def _query_options(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    request = ctx.request
    params = getattr(request, "query_params", None)
    if not params:
        return {}
    out: dict[str, Any] = {}
    for key, value in params.items():
        try:
            out[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            out[key] = value
    return out


def _meta_options(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    options = (meta or {}).get(RESET_META_KEY)
    return dict(options) if isinstance(options, Mapping) else {}


class EnvMcpServer:
    """The MCP server of one env class over a ``SessionManager``."""

    def __init__(
        self,
        env_class: EnvClass,
        manager: SessionManager,
        *,
        reset_options: Mapping[str, Any] | None = None,
        scope: Scope = "connection",
    ) -> None:
        meta = env_class.metadata()
        self.tools = ActionTools(env_class.action_model, default_name="step")
        if any(SESSION_ARG in s.input_schema.get("properties", {}) for s in self.tools.specs.values()):
            raise TypeError(f"{env_class.__name__}: an action field named {SESSION_ARG!r} clashes with MCP")
        self.manager = manager
        self.reset_defaults = dict(reset_options or {})
        self.scope = scope
        self._process_session: Session | None = None
        self._process_lock = asyncio.Lock()
        self.description = meta.description
        self.server: Server[Any] = Server(
            meta.name,
            version=meta.version or "",
            instructions=meta.description,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self._input_schema,
        )
        self.server.middleware.append(self._on_initialize)

    # --- handlers -----------------------------------------------------------------

    def _handles(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether this request's episode travels in a ``session_id`` argument."""
        return self.scope == "connection" and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        spec = self.tools.specs.get(name)
        if spec is None:
            return None
        # Only the sessionless era validates Mcp-Param headers: its schema has the handle.
        extra = {SESSION_ARG: _SESSION_PROPERTY} if self.scope == "connection" else None
        return spec.to_mcp(extra).input_schema

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        extra = {SESSION_ARG: _SESSION_PROPERTY} if self._handles(ctx) else None
        return mt.ListToolsResult(tools=[s.to_mcp(extra) for s in self.tools.specs.values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        arguments = dict(params.arguments or {})
        handle = arguments.pop(SESSION_ARG, None) if self._handles(ctx) else None
        try:
            action = self.tools.build(params.name, arguments)
        except UnknownTool as exc:
            raise MCPError(code=mt.INVALID_PARAMS, message=str(exc)) from None
        except ValidationFailed as exc:
            return error_result(exc.message)
        session, extra = await self._session_for(ctx, handle)
        try:
            obs = await session.step(action)
        except ResetRequired:
            hint = (
                "call without session_id to start a new one"
                if self._handles(ctx)
                else "reconnect to start a new one"
            )
            return error_result(f"the episode is over (the last result had done=true): {hint}")
        except WireError as err:
            return error_result(f"{err.code}: {err.message}")
        if self._handles(ctx):
            extra = {**(extra or {}), SESSION_ARG: session.id}
        return observation_result(obs, extra)

    # --- sessions -----------------------------------------------------------------

    async def _session_for(
        self, ctx: ServerRequestContext[Any, Any], handle: Any
    ) -> tuple[Session, dict[str, Any] | None]:
        """The request's env session, and the extra result keys (a new handle's episode start)."""
        try:
            if self.scope == "process":
                async with self._process_lock:
                    if self._process_session is None:
                        self._process_session, _ = await self._open(ctx, None)
                    return self._live(self._process_session), None
            if self._handles(ctx):
                if handle is None:
                    session, first = await self._open(ctx, ctx.meta)
                    return session, {RESET_RESULT_KEY: observation_result(first).structured_content}
                if not isinstance(handle, str):
                    raise SessionNotFound(f"{SESSION_ARG} must be a string")
                return self.manager.get(handle), None
            session, _ = await self._connection_session(ctx, None)
            return self._live(session), None
        except WireError as err:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"{err.code}: {err.message}") from None

    async def _connection_session(
        self, ctx: ServerRequestContext[Any, Any], meta: Mapping[str, Any] | None
    ) -> tuple[Session, BaseModel | None]:
        """This connection's env session, opened (and reset) on first use."""
        conn = _connection(ctx)
        lock = conn.state.setdefault(_LOCK_KEY, asyncio.Lock())
        async with lock:
            session = conn.state.get(_STATE_KEY)
            if session is not None:
                return session, None
            if meta is None and ctx.session.client_params is not None:
                meta = ctx.session.client_params.meta
            session, first = await self._open(ctx, meta)
            conn.state[_STATE_KEY] = session
            conn.exit_stack.push_async_callback(session.close, "MCP session ended")
            return session, first

    async def _on_initialize(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Middleware: an ``initialize`` session starts its episode, and its instructions
        carry the first observation."""
        result = await call_next(ctx)
        if ctx.method == "initialize" and self.scope == "connection" and isinstance(result, dict):
            params = ctx.params or {}
            meta = params.get("_meta") if isinstance(params, Mapping) else None
            try:
                _, first = await self._connection_session(ctx, meta if isinstance(meta, Mapping) else {})
            except WireError as err:
                raise MCPError(code=mt.INVALID_PARAMS, message=f"{err.code}: {err.message}") from None
            if first is not None:
                result["instructions"] = self.instructions(first)
        return result

    def instructions(self, first: BaseModel) -> str:
        """The server's description and the episode's first observation, for the model:
        its ``prompt`` (RFC 0002) when it has one, else the observation as JSON."""
        prompt = getattr(first, "prompt", None)
        if not (isinstance(prompt, str) and prompt):
            prompt = orjson.dumps(observation_result(first).structured_content).decode()
        return f"{self.description}\n\nThe episode has started. First observation:\n{prompt}"

    async def start(self) -> None:
        """``scope="process"``: open and reset the env session now; the server's
        instructions then carry its first observation."""
        async with self._process_lock:
            if self._process_session is None:
                options = ResetData.model_validate(self.reset_defaults)
                session = await self.manager.open(owner=None)
                try:
                    first = await session.reset(options)
                except BaseException:
                    await session.close("reset failed")
                    raise
                self._process_session = session
                self.server.instructions = self.instructions(first)

    @staticmethod
    def _live(session: Session) -> Session:
        if session.state is SessionState.CLOSED:
            raise SessionNotFound(
                f"this MCP session's episode was closed ({session.closed_reason}); reconnect to start another"
            )
        return session

    async def _open(
        self, ctx: ServerRequestContext[Any, Any], meta: Mapping[str, Any] | None
    ) -> tuple[Session, BaseModel]:
        options = {**self.reset_defaults, **_query_options(ctx), **_meta_options(meta)}
        try:
            data = ResetData.model_validate(options)
        except ValueError as exc:
            raise ValidationFailed(f"invalid reset options {options!r}: {exc}") from None
        peer = getattr(ctx.request, "client", None)  # the SDK's tasks do not see the request's context
        session = await self.manager.open(owner=None, client=getattr(peer, "host", None))
        try:
            first = await session.reset(data)
        except BaseException:
            await session.close("reset failed")
            raise
        return session, first

    async def close(self) -> None:
        """Close the process-scoped env session, if any."""
        if self._process_session is not None:
            await self._process_session.close("MCP server stopped")
