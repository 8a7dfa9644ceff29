"""Envs for the MCP tests, importable by name from a server process
(``openenv serve tests.mcp._mcp_envs:ToolServerEnv``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from openenv.mcp import ToolCall, ToolResult, mcp_server_env

TOOL_SERVER = str(Path(__file__).with_name("tool_server.py"))


def submitted(action: ToolCall, observation: ToolResult) -> float:
    """Reward 1.0 for a submitted "5", else 0.0."""
    return 1.0 if action.tool == "submit" and observation.text == "submitted 5" else 0.0


def tool_server_env(piddir: str, **kwargs):  # type: ignore[no-untyped-def]
    config = {"reward": submitted, "done_tools": ["submit"], **kwargs}
    return mcp_server_env(
        "tool_server", command=[sys.executable, TOOL_SERVER], env={"OPENENV_TEST_PIDDIR": piddir}, **config
    )


ToolServerEnv = tool_server_env(os.environ.get("OPENENV_TEST_PIDDIR", ""))
