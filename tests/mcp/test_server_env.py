"""An external MCP server (``tool_server.py``, written with the SDK) wrapped as an env,
served by our server and driven by our client; its process is gone on every path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from openenv import AsyncEnvClient, ExecutionError
from openenv.mcp import MCP_MODELS, McpServerEnv, ToolCall, ToolResult, mcp_server_env
from openenv.rewards import Rubric

from .._served import wait_served
from ._mcp_envs import tool_server_env

REPO = Path(__file__).resolve().parents[2]


def pids(piddir: Path) -> list[int]:
    return sorted(int(p.name) for p in piddir.iterdir())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purposes
        return f.read().split(") ", 1)[1][0] != "Z"


def wait_gone(pid_list: list[int], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while any(alive(p) for p in pid_list):
        assert time.monotonic() < deadline, f"still alive: {[p for p in pid_list if alive(p)]}"
        time.sleep(0.05)


async def test_episode_through_our_client(serve, tmp_path):
    env = tool_server_env(str(tmp_path), tool_timeout_s=0.5, max_steps=20)
    server = serve(env)
    async with AsyncEnvClient(server.url, MCP_MODELS) as client:
        first = await client.reset()
        tools = {t["name"]: t for t in first.observation.metadata["tools"]}
        assert set(tools) == {"add", "count", "nap", "submit"}
        assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
        (pid,) = pids(tmp_path)

        added = await client.step(ToolCall(tool="add", arguments={"a": 2, "b": 3}))
        assert added.observation.text == "5"
        assert added.observation.structured_content == {"result": 5}
        assert added.reward == 0.0
        assert not added.done

        bad = await client.step(ToolCall(tool="add", arguments={"a": "x"}))
        assert bad.observation.is_error
        unknown = await client.step(ToolCall(tool="rm", arguments={}))
        assert unknown.observation.is_error
        assert "unknown tool 'rm'" in unknown.observation.text

        slow = await client.step(ToolCall(tool="nap", arguments={"seconds": 1.5}))
        assert slow.observation.is_error
        assert slow.observation.timed_out

        counted = await client.step(ToolCall(tool="count"))  # the connection survived the timeout
        assert counted.observation.text == "1"

        state = await client.state()
        assert state.step_count == 5
        assert state.tools == ["add", "count", "nap", "submit"]

        final = await client.step(ToolCall(tool="submit", arguments={"answer": "5"}))
        assert final.reward == 1.0
        assert final.terminated
        assert not final.truncated

        await client.reset()  # a fresh server per episode; the last one is stopped
        assert (await client.step(ToolCall(tool="count"))).observation.text == "1"
        wait_gone([pid])
        assert len(pids(tmp_path)) == 2
    wait_gone(pids(tmp_path))
    server.wait_active(0)


class ResultIsTwo(Rubric):
    """An async rubric: 1.0 when the tool answered 2."""

    async def forward(self, action: ToolCall, observation: ToolResult) -> float:
        return 1.0 if observation.structured_content == {"result": 2} else 0.0


async def test_rubric_reward_and_max_steps(serve, tmp_path):
    server = serve(tool_server_env(str(tmp_path), max_steps=2, reward=ResultIsTwo()))
    async with AsyncEnvClient(server.url, MCP_MODELS) as client:
        await client.reset()
        two = await client.step(ToolCall(tool="add", arguments={"a": 1, "b": 1}))
        assert two.reward == 1.0
        assert not two.done
        last = await client.step(ToolCall(tool="count"))
        assert last.reward == 0.0
        assert last.truncated
        assert not last.terminated
    wait_gone(pids(tmp_path))


async def test_server_shutdown_stops_spawned_servers(serve, tmp_path):
    server = serve(tool_server_env(str(tmp_path)))
    async with AsyncEnvClient(server.url, MCP_MODELS) as client:
        await client.reset()
        assert len(pids(tmp_path)) == 1
        server.stop()
    wait_gone(pids(tmp_path))


async def test_a_server_that_cannot_start_is_an_error_and_leaves_nothing(serve, tmp_path):
    server = serve(
        mcp_server_env(
            "broken", command=[sys.executable, "-c", "import sys; sys.exit(3)"], connect_timeout_s=10
        )
    )
    async with AsyncEnvClient(server.url, MCP_MODELS) as client:
        with pytest.raises(ExecutionError, match="MCP server"):
            await client.reset()
    server.wait_active(0)


def test_killed_env_server_takes_its_mcp_servers_along(tmp_path):
    """SIGKILL on ``openenv serve``: the wrapped server reads EOF on stdin and exits."""
    port_probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    port = int(port_probe.stdout)
    env = {**os.environ, "OPENENV_TEST_PIDDIR": str(tmp_path), "OPENENV_IDLE_TIMEOUT_S": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", "tests.mcp._mcp_envs:ToolServerEnv", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_served(url, proc, 30, "openenv serve")
        session = httpx.post(f"{url}/sessions", timeout=5).json()["session_id"]
        httpx.post(f"{url}/sessions/{session}/reset", json={}, timeout=30).raise_for_status()
        (pid,) = pids(tmp_path)
        assert alive(pid)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    wait_gone([pid])


def test_constructor_arguments_are_checked():
    with pytest.raises(TypeError, match="exactly one of command= or url="):
        McpServerEnv()
    with pytest.raises(TypeError, match="unknown arguments: colour"):
        McpServerEnv(url="http://127.0.0.1:1/mcp", colour="red")
    with pytest.raises(TypeError, match="exactly one"):
        mcp_server_env("x", command=["a"], url="http://b")
