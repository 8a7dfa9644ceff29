"""``openenv mcp IMAGE --image``: an env image speaks MCP over stdio (the base image
carries the ``mcp`` extra), driven by the official SDK 2.x client."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]


async def test_an_env_image_serves_mcp_over_stdio(docker: Any, echo_image: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "openenv", "mcp", echo_image, "--image"], cwd=str(REPO)
    )
    async with Client(params) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "echo"
        result = await client.call_tool("echo", {"message": "from a container"})
        assert result.structured_content is not None
        assert result.structured_content["echoed_message"] == "from a container"
