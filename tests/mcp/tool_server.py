"""A tiny MCP server written with the official SDK, run as a subprocess by the tests.

``python tests/mcp/tool_server.py`` serves stdio. With ``OPENENV_TEST_PIDDIR`` set it
first writes an empty file named by its pid there, so tests can check that every
process they caused is gone after close, error or server shutdown.
"""

from __future__ import annotations

import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("tool-server")
_counter = {"n": 0}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def count() -> int:
    """Increment and return a per-process counter."""
    _counter["n"] += 1
    return _counter["n"]


@server.tool()
def nap(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "awake"


@server.tool()
def submit(answer: str) -> str:
    """Submit the final answer."""
    return f"submitted {answer}"


if __name__ == "__main__":
    piddir = os.environ.get("OPENENV_TEST_PIDDIR")
    if piddir:
        open(os.path.join(piddir, str(os.getpid())), "w").close()
    server.run("stdio")
