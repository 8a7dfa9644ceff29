"""Upstream's ``MCPEnvironment``: our env whose FastMCP tools answer through ``step``
(``openenv.mcp._tool_env``), with upstream's tool models and reserved names."""

from ...mcp._tool_env import MCP_TOOL_CALL_TIMEOUT, VALID_MODES, McpToolEnvironment, get_server_tools
from .mcp_types import RESERVED_TOOL_NAMES, ListToolsObservation, Tool

__all__ = ["MCP_TOOL_CALL_TIMEOUT", "VALID_MODES", "MCPEnvironment", "get_server_tools"]


class MCPEnvironment(McpToolEnvironment):
    """Base of envs that expose FastMCP tools through ``step``; subclasses write
    ``reset``, ``state`` and ``_step_impl`` (every action that is not a tool action)."""

    tool_model = Tool
    list_tools_observation = ListToolsObservation
    reserved_tool_names = RESERVED_TOOL_NAMES
