"""Upstream's MCP models: the tool actions and observations, and JSON-RPC 2.0 envelopes
(``openenv.server._jsonrpc``, ``openenv.server._upstream_models``, ``openenv.harness``'s
``Tool``)."""

from ...harness import RESERVED_TOOL_NAMES, Tool
from ...server._jsonrpc import JsonRpcError, JsonRpcErrorCode, JsonRpcRequest, JsonRpcResponse
from ...server._upstream_models import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    McpMethod,
    Observation,
    ToolError,
    ToolErrorType,
    WSMCPMessage,
    WSMCPResponse,
)

__all__ = [
    "RESERVED_TOOL_NAMES", "CallToolAction", "CallToolObservation", "JsonRpcError", "JsonRpcErrorCode",
    "JsonRpcRequest", "JsonRpcResponse", "ListToolsAction", "ListToolsObservation", "McpMethod", "Tool",
    "ToolError", "ToolErrorType", "WSMCPMessage", "WSMCPResponse",
]


class ListToolsObservation(Observation):
    tools: list[Tool]
