"""The MCP bridge on real task envs: the terminal env's task reaches the model, and its
tool runs commands, over streamable HTTP and over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from terminal_env import TerminalEnv

REPO = Path(__file__).resolve().parents[2]
TASK = "Count the lines of `app.log` that contain `ERROR`"


async def test_terminal_env_over_streamable_http(serve):
    server = serve(TerminalEnv)
    async with Client(f"{server.url}/mcp?task_id=count-errors", mode="legacy") as client:
        assert client.instructions is not None
        assert TASK in client.instructions  # the task prompt, from the reset observation
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "terminal"
        command = "grep -c ERROR app.log > errors.txt; echo ok"
        result = await client.call_tool("terminal", {"command": command})
        assert result.structured_content is not None
        assert result.structured_content["exit_code"] == 0
        assert result.structured_content["output"] == "ok\n"
        submitted = await client.call_tool("terminal", {"type": "submit"})
        assert submitted.structured_content is not None
        assert submitted.structured_content["done"] is True
        assert submitted.structured_content["reward"] == 1.0
    server.wait_active(0)


async def test_terminal_env_over_stdio():
    args = ["-m", "openenv", "mcp", "envs/terminal_env", "--reset-options", '{"task_id": "count-errors"}']
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO))
    async with Client(params) as client:
        assert client.instructions is not None
        assert TASK in client.instructions
        result = await client.call_tool("terminal", {"command": "echo hi && pwd"})
        assert result.structured_content is not None
        assert result.structured_content["output"] == "hi\n/workspace\n"
        bad = await client.call_tool("terminal", {"type": "run"})  # the env's own validator refuses it
        assert bad.is_error
        assert "needs command" in bad.content[0].text
