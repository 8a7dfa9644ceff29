"""``MCPToolClient`` (upstream's production mode) against our server's ``/mcp`` dialect."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv import ExecutionError
from openenv.core.mcp_client import MCPToolClient
from tests._envs import make_env

pytest.importorskip("mcp", reason="our /mcp tools need the mcp extra (scripts/setup.sh installs it)")


def test_sync_tools_share_the_websocket_session(serve: Any) -> None:
    server = serve(make_env())
    with MCPToolClient(base_url=server.url).sync() as env:
        names = [t.name for t in env.list_tools()]
        assert names == ["t"]
        assert env.has_tool("t")
        assert not env.has_tool("nope")
        env.reset()
        first = env.call_tool("t", message="a")
        second = env.call_tool("t", message="b")
        assert (first["step"], second["step"]) == (1, 2)
        # The WebSocket drives the same env instance as the tool calls.
        assert env.state().step_count == 2
    server.wait_active(0)


def test_async_call_tool_and_errors(serve: Any) -> None:
    server = serve(make_env())

    async def main() -> dict[str, Any]:
        async with MCPToolClient(base_url=server.url) as env:
            tool = await env.get_tool("t")
            assert tool is not None
            assert "message" in tool.input_schema["properties"]
            with pytest.raises(ExecutionError, match="Tool 'missing' failed"):
                await env.call_tool("missing")
            result: dict[str, Any] = await env.call_tool("t", message="x")
            return result

    assert asyncio.run(main())["message"] == "x"
    server.wait_active(0)


def test_simulation_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="production"):
        MCPToolClient(base_url="http://127.0.0.1:1", mode="simulation")
