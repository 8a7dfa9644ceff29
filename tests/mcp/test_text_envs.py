"""The MCP bridge on real task envs: the terminal env's task reaches the model, and its
tools (one per action of its tagged union) run commands, over streamable HTTP and over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from terminal_env import TerminalEnv

REPO = Path(__file__).resolve().parents[2]
TASK = "Count the lines of `app.log` that contain `ERROR`"
TOOLS = ["run", "send_keys", "read", "interrupt", "restart", "write_file", "read_file", "submit"]


async def test_terminal_env_over_streamable_http(serve):
    server = serve(TerminalEnv)
    async with Client(f"{server.url}/mcp?task_id=count-errors", mode="legacy") as client:
        assert client.instructions is not None
        assert TASK in client.instructions  # the task prompt, from the reset observation
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == TOOLS  # one tool per member of the action union
        assert tools["run"].input_schema["required"] == ["command"]
        assert "type" not in tools["run"].input_schema["properties"]  # the bridge fills the tag in
        assert tools["submit"].description == "Run the task's tests; the episode ends with their reward."
        command = "grep -c ERROR app.log > errors.txt; echo ok"
        result = await client.call_tool("run", {"command": command})
        assert result.structured_content is not None
        assert result.structured_content["exit_code"] == 0
        assert result.structured_content["output"] == "ok\n"
        submitted = await client.call_tool("submit", {})
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
        assert [tool.name for tool in (await client.list_tools()).tools] == TOOLS
        result = await client.call_tool("run", {"command": "echo hi && pwd"})
        assert result.structured_content is not None
        assert result.structured_content["output"] == "hi\n/workspace\n"
        wrote = await client.call_tool("write_file", {"path": "a.txt", "content": 'it\'s "quoted"\n'})
        assert wrote.structured_content is not None
        assert wrote.structured_content["exit_code"] == 0
        read = await client.call_tool("read_file", {"path": "a.txt"})
        assert read.structured_content is not None
        assert read.structured_content["output"] == 'it\'s "quoted"\n'
        bad = await client.call_tool("run", {})  # the run member requires a command
        assert bad.is_error
        assert "command: Field required" in bad.content[0].text
