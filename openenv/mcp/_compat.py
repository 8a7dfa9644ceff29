"""Upstream OpenEnv 0.10's MCP dialect: plain JSON-RPC on ``POST /mcp`` and ``{"type": "mcp"}``.

Upstream's ``MCPToolClient`` posts single JSON-RPC requests with no ``initialize``, no
``Mcp-Session-Id`` and no SSE ``Accept``: ``tools/list``, ``tools/call`` (with an optional
``params.session_id``), ``openenv/session/create`` and ``openenv/session/close``. They are
answered here with the same tools as the standard endpoint. Results are MCP's
``CallToolResult`` (camelCase, as the spec) plus upstream's ``data`` key holding the
structured content, which is what ``MCPToolClient.call_tool`` returns.
"""

from __future__ import annotations

from typing import Any

import mcp_types as mt

from .._exceptions import WireError
from .._protocol import ResetData
from ..server._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, envelope_error, rpc_error
from ..server._sessions import Session, SessionState
from ._bridge import EnvMcpServer
from ._tools import UnknownTool, error_result, observation_result

_METHODS = frozenset({"tools/list", "tools/call", "openenv/session/create", "openenv/session/close"})


def _ok(rid: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _dump(result: mt.CallToolResult) -> dict[str, Any]:
    out = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    out["data"] = result.structured_content
    return out


class CompatRpc:
    """Answers upstream-style JSON-RPC requests for one env's MCP server."""

    def __init__(self, bridge: EnvMcpServer) -> None:
        self.bridge = bridge
        self.manager = bridge.manager

    async def handle(self, request: Any, bound: Session | None = None) -> dict[str, Any]:
        """Answer one request object; ``bound`` is the WebSocket's own session, if any."""
        invalid = envelope_error(request)
        if invalid is not None:
            return invalid
        rid, method = request.get("id"), request["method"]
        params = request.get("params") or {}
        if method not in _METHODS:
            hint = " (standard MCP clients: send initialize, or the 2026-07-28 headers)"
            return rpc_error(rid, METHOD_NOT_FOUND, f"Method not found: {method}{hint}")
        if not isinstance(params, dict):
            return rpc_error(rid, INVALID_PARAMS, "params must be an object")
        try:
            return _ok(rid, await self._dispatch(method, params, bound))
        except UnknownTool as exc:
            return rpc_error(rid, INVALID_PARAMS, str(exc))
        except WireError as err:
            return rpc_error(rid, INVALID_PARAMS, f"{err.code}: {err.message}")
        except Exception as exc:  # a bug here, never the env's (Session wraps those)
            return rpc_error(rid, INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")

    async def _dispatch(self, method: str, params: dict[str, Any], bound: Session | None) -> dict[str, Any]:
        if method == "tools/list":
            tools = [s.to_mcp() for s in self.bridge.tools.specs.values()]
            return {"tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]}
        if method == "openenv/session/create":
            session = await self.manager.open(owner=None)
            return {"session_id": session.id}
        if method == "openenv/session/close":
            session = self.manager.get(str(params.get("session_id")))
            await session.close("closed by client")
            return {"session_id": session.id, "closed": True}
        return await self._call(params, bound)

    async def _call(self, params: dict[str, Any], bound: Session | None) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise UnknownTool("tools/call needs params.name (a string) and params.arguments (an object)")
        try:
            action = self.bridge.tools.build(name, arguments)
        except WireError as err:
            return _dump(error_result(err.message))
        sid = params.get("session_id")
        session = self.manager.get(str(sid)) if sid is not None else bound
        throwaway = session is None
        if session is None:  # upstream: a throwaway env per request without a session
            session = await self.manager.open(owner=None)
        try:
            if session.state is SessionState.READY:
                await session.reset(ResetData.model_validate(self.bridge.reset_defaults))
            try:
                obs = await session.step(action)
            except WireError as err:
                return _dump(error_result(f"{err.code}: {err.message}"))
            return _dump(observation_result(obs))
        finally:
            if throwaway:
                await session.close("stateless request")
