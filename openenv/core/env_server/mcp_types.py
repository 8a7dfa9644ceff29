"""Upstream's MCP models: tool actions and observations, and JSON-RPC 2.0 envelopes.

Data only (no MCP SDK): ``ListToolsAction`` / ``CallToolAction`` are actions an
``MCPEnvironment`` answers through ``step``; the JSON-RPC models describe what
``POST /mcp`` and ``{"type": "mcp"}`` WebSocket frames carry.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from ... import _protocol as _proto
from ...harness import RESERVED_TOOL_NAMES, Tool
from ...server import _jsonrpc as _rpc
from .types import Action, Observation, _UpstreamFrame

__all__ = [
    "RESERVED_TOOL_NAMES",
    "CallToolAction",
    "CallToolObservation",
    "JsonRpcError",
    "JsonRpcErrorCode",
    "JsonRpcRequest",
    "JsonRpcResponse",
    "ListToolsAction",
    "ListToolsObservation",
    "McpMethod",
    "Tool",
    "ToolError",
    "ToolErrorType",
    "WSMCPMessage",
    "WSMCPResponse",
]


class JsonRpcErrorCode(int, Enum):
    """The codes our server sends (``openenv.server._jsonrpc``), and upstream's server error."""

    PARSE_ERROR = _rpc.PARSE_ERROR
    INVALID_REQUEST = _rpc.INVALID_REQUEST
    METHOD_NOT_FOUND = _rpc.METHOD_NOT_FOUND
    INVALID_PARAMS = _rpc.INVALID_PARAMS
    INTERNAL_ERROR = _rpc.INTERNAL_ERROR
    SERVER_ERROR = -32000


_DEFAULT_MESSAGES = {
    JsonRpcErrorCode.PARSE_ERROR: "Parse error",
    JsonRpcErrorCode.INVALID_REQUEST: "Invalid Request",
    JsonRpcErrorCode.METHOD_NOT_FOUND: "Method not found",
    JsonRpcErrorCode.INVALID_PARAMS: "Invalid params",
    JsonRpcErrorCode.INTERNAL_ERROR: "Internal error",
    JsonRpcErrorCode.SERVER_ERROR: "Server error",
}


class McpMethod(str, Enum):  # noqa: UP042 - upstream's str(), not StrEnum's
    TOOLS_LIST = "tools/list"
    TOOLS_CALL = "tools/call"


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


class ToolErrorType(str, Enum):  # noqa: UP042 - upstream's str(), not StrEnum's
    EXECUTION_ERROR = "execution_error"
    INVALID_ARGS = "invalid_args"
    TRANSPORT_ERROR = "transport_error"
    TOOL_NOT_FOUND = "tool_not_found"
    TIMEOUT = "timeout"


class ToolError(BaseModel):
    """A failure around a tool call (the tool's own errors are in its result)."""

    model_config = ConfigDict(extra="forbid")

    error_type: ToolErrorType
    message: str


class ListToolsAction(Action):
    """Ask for the env's tools; needs no reset first."""

    type: Literal["list_tools"] = "list_tools"


class CallToolAction(Action):
    type: Literal["call_tool"] = "call_tool"
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ListToolsObservation(Observation):
    tools: list[Tool]


class CallToolObservation(Observation):
    """A tool's result (its own errors included), or ``error`` when the call failed."""

    tool_name: str
    result: Any = None
    error: ToolError | None = None


class WSMCPMessage(_UpstreamFrame, _proto.McpMessage):
    type: Literal["mcp"] = "mcp"


class WSMCPResponse(_UpstreamFrame, _proto.McpReply):
    type: Literal["mcp"] = "mcp"
