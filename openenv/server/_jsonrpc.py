"""JSON-RPC 2.0 on the wire: ``POST /mcp`` and ``{"type": "mcp"}`` frames on ``/ws``.

Upstream OpenEnv carries tool calls as JSON-RPC there. The server owns the envelope
(``envelope_error``), the error codes, and the answer of an app with no endpoint
plugged in for it (``mcp_not_supported``: upstream's "Environment does not support
MCP" for a well-formed request, the JSON-RPC codes for a malformed one). What answers
when one is plugged in comes through ``_mounts`` (openenv's MCP bridge is one). The
envelopes as models (upstream's ``JsonRpcRequest`` / ``JsonRpcResponse`` /
``JsonRpcError``, with ``JsonRpcErrorCode``) are for code that builds or checks them.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_TOOL_METHODS = frozenset({"tools/list", "tools/call"})


async def read_body(receive: Any) -> bytes:
    """The whole body of an ASGI HTTP request (a JSON-RPC POST), however it was chunked."""
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


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


class JsonRpcErrorCode(int, Enum):
    """The codes above, and upstream's server error (a tool call that failed)."""

    PARSE_ERROR = PARSE_ERROR
    INVALID_REQUEST = INVALID_REQUEST
    METHOD_NOT_FOUND = METHOD_NOT_FOUND
    INVALID_PARAMS = INVALID_PARAMS
    INTERNAL_ERROR = INTERNAL_ERROR
    SERVER_ERROR = -32000


_DEFAULT_MESSAGES = {
    JsonRpcErrorCode.PARSE_ERROR: "Parse error",
    JsonRpcErrorCode.INVALID_REQUEST: "Invalid Request",
    JsonRpcErrorCode.METHOD_NOT_FOUND: "Method not found",
    JsonRpcErrorCode.INVALID_PARAMS: "Invalid params",
    JsonRpcErrorCode.INTERNAL_ERROR: "Internal error",
    JsonRpcErrorCode.SERVER_ERROR: "Server error",
}


class JsonRpcError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: int
    message: str
    data: Any | None = None

    @classmethod
    def from_code(cls, code: JsonRpcErrorCode, message: str | None = None, data: Any = None) -> JsonRpcError:
        return cls(
            code=code.value, message=message or _DEFAULT_MESSAGES.get(code, "Unknown error"), data=data
        )


class JsonRpcRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] = Field(default_factory=dict)
    id: str | int | None = None


class JsonRpcResponse(BaseModel):
    """A reply: ``result`` or ``error``, never both (the other key is left out)."""

    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"] = "2.0"
    result: Any | None = None
    error: JsonRpcError | None = None
    id: str | int | None = None

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = {"jsonrpc": self.jsonrpc, "id": self.id}
        if self.error is not None:
            data["error"] = self.error.model_dump()
        else:
            data["result"] = self.result
        return data

    def model_dump_json(self, **kwargs: Any) -> str:
        return orjson.dumps(self.model_dump()).decode()

    @classmethod
    def success(cls, result: Any, request_id: str | int | None = None) -> JsonRpcResponse:
        return cls(result=result, id=request_id)

    @classmethod
    def error_response(
        cls,
        code: JsonRpcErrorCode,
        message: str | None = None,
        data: Any = None,
        request_id: str | int | None = None,
    ) -> JsonRpcResponse:
        return cls(error=JsonRpcError.from_code(code, message, data), id=request_id)
