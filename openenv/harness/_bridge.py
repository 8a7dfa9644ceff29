"""``SessionMCPBridge``: a session's tools behind MCP JSON-RPC (``tools/list``, ``tools/call``),
in process, for an opaque agent to call through whatever transport its runner puts in front."""

from __future__ import annotations

from typing import Any

from ..server._jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, rpc_error
from ._session import ResourceSession
from ._types import RESERVED_TOOL_NAMES

__all__ = ["SessionMCPBridge"]


def _rid(request_id: Any) -> str | int | None:
    return request_id if isinstance(request_id, (str, int)) else None


def _error(code: int, message: str, request_id: Any) -> dict[str, Any]:
    return rpc_error(_rid(request_id), code, message)


def _result(result: Any, request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": _rid(request_id), "result": result}


class SessionMCPBridge:
    """Answers JSON-RPC request objects with the session's tools."""

    def __init__(self, session: ResourceSession) -> None:
        self.session = session

    def handle_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC response object for one request object (errors as JSON-RPC errors)."""
        rid = request.get("id")
        params = request.get("params") or {}
        if request.get("jsonrpc") != "2.0" or not isinstance(params, dict):
            return _error(INVALID_REQUEST, "Invalid Request", rid)
        method = request.get("method")
        if method == "tools/list":
            tools = [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in self.session.list_tools()
            ]
            return _result({"tools": tools}, rid)
        if method == "tools/call":
            return self._call(params, rid)
        return _error(METHOD_NOT_FOUND, "Method not found", rid)

    def _call(self, params: dict[str, Any], rid: Any) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return _error(INVALID_PARAMS, "tools/call needs a tool name and an arguments object", rid)
        if name in RESERVED_TOOL_NAMES:
            return _error(INVALID_PARAMS, f"Reserved orchestration tool: {name}", rid)
        try:
            result = self.session.call_tool(name, dict(arguments))
        except KeyError as exc:  # no such tool, or (a tool the session lists) a missing argument
            known = name in {t.name for t in self.session.list_tools()}
            code = INVALID_PARAMS if known else METHOD_NOT_FOUND
            return _error(code, str(exc.args[0]) if exc.args else name, rid)
        except ValueError as exc:
            return _error(INVALID_PARAMS, str(exc), rid)
        except Exception as exc:  # the env's failure, reported to the agent rather than raised
            return _error(INTERNAL_ERROR, str(exc) or type(exc).__name__, rid)
        return _result(result.to_plain(), rid)
