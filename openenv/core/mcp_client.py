"""Upstream's MCP clients: our hook-based tool clients (``openenv.client._hooks_tools``)
with upstream's MCP models (``openenv.core.env_server.mcp_types``)."""

from __future__ import annotations

import importlib
from typing import Any

from ..client._hooks_tools import GenericMCPObservation, ToolCallingHookClient, ToolsHookClient

__all__ = ["GenericMCPObservation", "MCPClientBase", "MCPToolClient"]


class MCPClientBase(ToolsHookClient):
    """An env client that also lists tools (``list_tools``). Production mode only."""

    def _mcp_types(self) -> Any:
        return importlib.import_module("openenv.core.env_server.mcp_types")


class MCPToolClient(ToolCallingHookClient, MCPClientBase):
    """Tool calling: ``list_tools()``, ``call_tool(name, **args)``, ``get_tool``, ``has_tool``.

    >>> async with MCPToolClient(base_url="http://127.0.0.1:8000") as env:  # doctest: +SKIP
    ...     await env.call_tool("echo_message", message="hi")
    """
