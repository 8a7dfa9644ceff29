"""JSON-RPC 2.0 on the wire: ``POST /mcp`` and ``{"type": "mcp"}`` frames on ``/ws``.

Upstream OpenEnv carries tool calls as JSON-RPC there. The server owns the envelope
(``envelope_error``), the error codes, and the answer of an app with no endpoint
plugged in for it (``mcp_not_supported``: upstream's "Environment does not support
MCP" for a well-formed request, the JSON-RPC codes for a malformed one). What answers
when one is plugged in comes through ``_mounts`` (openenv's MCP bridge is one).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_TOOL_METHODS = frozenset({"tools/list", "tools/call"})


def rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, "data": None}}


def envelope_error(request: Any) -> dict[str, Any] | None:
    """The Invalid Request reply to anything but a JSON-RPC 2.0 request object; None for one."""
    if not isinstance(request, dict):
        rid = None
    elif request.get("jsonrpc") == "2.0" and isinstance(request.get("method"), str):
        return None
    else:
        rid = request.get("id")
    return rpc_error(rid, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 request")


def mcp_not_supported(request: Any) -> dict[str, Any]:
    """Answer one JSON-RPC request object for an env without MCP tools."""
    invalid = envelope_error(request)
    if invalid is not None:
        return invalid
    rid = request.get("id")
    if request["method"] in _TOOL_METHODS:
        return rpc_error(rid, INTERNAL_ERROR, "Environment does not support MCP")
    return rpc_error(rid, METHOD_NOT_FOUND, f"Method not found: {request['method']}")
