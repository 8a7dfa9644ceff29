from openenv.core.mcp_client import MCPToolClient


class ToolsEnv(MCPToolClient):
    """The env's FastMCP tools, called by name."""
