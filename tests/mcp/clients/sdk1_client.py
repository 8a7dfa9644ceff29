"""Run by the tests under the mcp 1.x SDK (``.venv-mcp1``): an ``initialize`` client.

``python sdk1_client.py URL PYTHON TARGET RESET_OPTIONS_JSON MESSAGE...`` drives two
servers, each with its own MCP session: streamable HTTP at URL, and stdio by spawning
``PYTHON -m openenv mcp TARGET --reset-options RESET_OPTIONS_JSON``. On each it lists
the tools, calls the first tool once per message, makes one call with bad arguments,
and it prints ONE JSON line ``{"http": {...}, "stdio": {...}}`` with what it saw. (One
process for both: importing the SDK is the slow part.)
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


async def drive(session: ClientSession, messages: list[str]) -> dict[str, Any]:
    init = await session.initialize()
    tools = (await session.list_tools()).tools
    name = tools[0].name
    calls = []
    for message in messages:
        result = await session.call_tool(name, {"message": message})
        calls.append({"is_error": result.isError, "structured": result.structuredContent})
    bad = await session.call_tool(name, {"nope": 1})
    return {
        "protocol": init.protocolVersion,
        "server": init.serverInfo.name,
        "tools": [{"name": t.name, "schema": t.inputSchema} for t in tools],
        "calls": calls,
        "bad_is_error": bad.isError,
    }


async def main(url: str, python: str, target: str, reset: str, messages: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
        out["http"] = await drive(session, messages)
    args = ["-m", "openenv", "mcp", target, "--reset-options", reset]
    params = StdioServerParameters(command=python, args=args)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        out["stdio"] = await drive(session, messages)
    return out


if __name__ == "__main__":
    url, python, target, reset, *messages = sys.argv[1:]
    print(json.dumps(asyncio.run(main(url, python, target, reset, messages))))
