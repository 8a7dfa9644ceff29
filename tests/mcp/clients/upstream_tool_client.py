"""Run by the tests under upstream OpenEnv 0.10 (``.venv-upstream``): its ``MCPToolClient``.

``python upstream_tool_client.py BASE_URL MESSAGE...``: connects (``openenv/session/create``
then ``/ws?session_id=``), lists the tools, calls the first tool once per message, makes
one bad call, closes (``openenv/session/close``) and prints ONE JSON line. Exit 5 when
upstream cannot be imported.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

try:
    from openenv.core.mcp_client import MCPToolClient
except Exception as exc:  # not installed: the test skips on status 5
    sys.stderr.write(f"cannot import upstream openenv.core: {exc!r}\n")
    sys.exit(5)


async def main(base_url: str, messages: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with MCPToolClient(base_url=base_url) as client:
        out["session_id"] = client._production_session_id
        tools = await client.list_tools()
        out["tools"] = [{"name": t.name, "schema": t.input_schema} for t in tools]
        out["has_tool"] = await client.has_tool(tools[0].name)
        out["calls"] = [await client.call_tool(tools[0].name, message=m) for m in messages]
        try:
            await client.call_tool("no_such_tool")
            out["unknown_tool"] = "no error"
        except RuntimeError as exc:
            out["unknown_tool"] = str(exc)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2:]))))
