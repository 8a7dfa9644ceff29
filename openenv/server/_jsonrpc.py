"""JSON-RPC 2.0 answers for ``POST /mcp`` and ``{"type": "mcp"}`` frames.

Envs here do not expose MCP tools yet, so every well-formed request gets upstream's
"Environment does not support MCP" error; malformed ones get the JSON-RPC codes.
This is the seam where the MCP bridge plugs in.
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603

_TOOL_METHODS = frozenset({"tools/list", "tools/call"})


def rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, "data": None}}


def mcp_not_supported(request: Any) -> dict[str, Any]:
    """Answer one JSON-RPC request object for an env without MCP tools."""
    if (
        not isinstance(request, dict)
        or request.get("jsonrpc") != "2.0"
        or not isinstance(request.get("method"), str)
    ):
        rid = request.get("id") if isinstance(request, dict) else None
        return rpc_error(rid, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 request")
    rid = request.get("id")
    if request["method"] in _TOOL_METHODS:
        return rpc_error(rid, INTERNAL_ERROR, "Environment does not support MCP")
    return rpc_error(rid, METHOD_NOT_FOUND, f"Method not found: {request['method']}")
