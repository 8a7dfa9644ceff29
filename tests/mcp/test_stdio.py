"""``openenv mcp TARGET`` over stdio, driven by the official SDK 2.x client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from echo_env import EchoEnv
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]


def openenv_mcp(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "openenv", "mcp", *args], cwd=str(REPO))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_env_folder_over_stdio_is_one_episode(mode):
    params = openenv_mcp("envs/echo_env", "--reset-options", '{"max_steps": 2}')
    async with Client(params, mode=mode) as client:
        assert client.instructions is not None
        assert "Echo environment ready!" in client.instructions  # the first observation
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "echo"
        assert "session_id" not in tool.input_schema["properties"]  # the process is the episode
        first = await client.call_tool("echo", {"message": "a"})
        assert first.structured_content is not None
        assert first.structured_content["echoed_message"] == "a"
        bad = await client.call_tool("echo", {"message": 3})
        assert bad.is_error
        second = await client.call_tool("echo", {"message": "bb"})
        assert second.structured_content is not None
        assert second.structured_content["truncated"] is True  # step 2 of the same episode
        over = await client.call_tool("echo", {"message": "c"})
        assert over.is_error
        assert "episode is over" in over.content[0].text


async def test_served_url_is_relayed_over_one_env_session(serve):
    server = serve(EchoEnv)
    async with Client(openenv_mcp(server.url, "--reset-options", '{"max_steps": 3}')) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "echo"
        for n in (1, 2, 3):
            result = await client.call_tool("echo", {"message": "x" * n})
            assert result.structured_content is not None
            assert result.structured_content["message_length"] == n
        assert result.structured_content["truncated"] is True
        assert server.active == 1
    server.wait_active(0)


@pytest.mark.parametrize(
    ("target", "rc", "start"),
    [
        ("no_such_env_anywhere", 2, "openenv mcp: no environment 'no_such_env_anywhere'"),
        ("http://127.0.0.1:9", 1, "openenv mcp: no MCP session at http://127.0.0.1:9/mcp: ConnectError"),
    ],
)
def test_bad_target_is_one_line(target, rc, start):
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "mcp", target],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == rc
    assert proc.stderr.startswith(start)
    assert proc.stderr.count("\n") == 1
    assert proc.stdout == ""


async def test_readme_harness_entries_work(serve):
    """The ``mcpServers`` block of docs/tour.md: the stdio command and the URL entry both serve."""
    readme = (REPO / "docs" / "tour.md").read_text()  # the README's tour
    section = readme[readme.index("## Use it from an agent harness (MCP)") :]
    block = section[section.index("```json\n") + 8 : section.index("```\n", section.index("```json\n") + 8)]
    entries = json.loads(block)["mcpServers"]
    (stdio,) = [e for e in entries.values() if "command" in e]
    (http,) = [e for e in entries.values() if "url" in e]
    command = str(Path(sys.executable).with_name(stdio["command"]))  # the venv's console script
    async with Client(StdioServerParameters(command=command, args=stdio["args"], cwd=str(REPO))) as client:
        result = await client.call_tool("echo", {"message": "hi"})
        assert result.structured_content is not None
        assert result.structured_content["echoed_message"] == "hi"
    server = serve(EchoEnv)
    assert http["url"].startswith("http://127.0.0.1:8000/mcp")
    async with Client(http["url"].replace("http://127.0.0.1:8000", server.url)) as client:
        result = await client.call_tool("echo", {"message": "hi"})
        assert result.structured_content is not None
        assert result.structured_content["echoed_message"] == "hi"
