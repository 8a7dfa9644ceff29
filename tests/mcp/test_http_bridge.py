"""``/mcp`` on a served env, driven by the official SDK 2.x client over a real socket.

The sessionless 2026-07-28 protocol (``mode="auto"``) carries the episode in a
``session_id`` tool argument; ``initialize`` clients (``mode="legacy"``) get one env
session per MCP session. Upstream's plain JSON-RPC dialect is at the end.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from echo_env import EchoEnv
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from openenv.mcp import RESET_META_KEY, SESSION_ARG

from .._envs import make_env


def mcp_url(server, query: str = "") -> str:
    return f"{server.url}/mcp{query}"


async def test_sessionless_client_continues_an_episode_by_handle(serve):
    server = serve(EchoEnv)
    async with Client(mcp_url(server, "?max_steps=2")) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "echo"
        assert SESSION_ARG in tool.input_schema["properties"]
        assert tool.input_schema["required"] == ["message"]

        first = await client.call_tool("echo", {"message": "hi"})
        assert first.is_error is False
        data = first.structured_content
        assert data is not None
        assert data["echoed_message"] == "hi"
        assert data["reset_observation"]["echoed_message"] == "Echo environment ready!"
        assert data["done"] is False
        handle = data[SESSION_ARG]
        assert server.active == 1

        second = await client.call_tool("echo", {"message": "again", SESSION_ARG: handle})
        assert second.structured_content is not None
        assert second.structured_content[SESSION_ARG] == handle
        assert "reset_observation" not in second.structured_content
        assert second.structured_content["truncated"] is True  # max_steps=2 from the URL

        over = await client.call_tool("echo", {"message": "more", SESSION_ARG: handle})
        assert over.is_error is True
        assert "episode is over" in over.content[0].text

        fresh = await client.call_tool("echo", {"message": "new"})  # no handle: a new episode
        assert fresh.structured_content is not None
        assert fresh.structured_content[SESSION_ARG] != handle
        assert fresh.structured_content["truncated"] is False
        assert server.active == 2

        with pytest.raises(MCPError, match="SESSION_NOT_FOUND"):
            await client.call_tool("echo", {"message": "x", SESSION_ARG: "no-such-session"})


async def test_reset_options_in_request_meta(serve):
    server = serve(EchoEnv)
    async with Client(mcp_url(server)) as client:
        result = await client.call_tool("echo", {"message": "a"}, meta={RESET_META_KEY: {"max_steps": 1}})
        assert result.structured_content is not None
        assert result.structured_content["truncated"] is True
        with pytest.raises(MCPError, match="max_steps must be a positive integer"):  # the env's reset refused
            await client.call_tool("echo", {"message": "a"}, meta={RESET_META_KEY: {"max_steps": -1}})
    server.wait_active(1)  # the failed reset's session is closed again


async def test_initialize_session_is_one_env_session_closed_with_it(serve):
    env = make_env()
    server = serve(env)
    async with Client(mcp_url(server), mode="legacy") as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "t"
        assert SESSION_ARG not in tool.input_schema["properties"]
        assert server.active == 1  # the episode started with the MCP session
        assert client.instructions is not None
        assert '"message":"ready"' in client.instructions  # the reset observation, for the model
        for step in (1, 2, 3):
            result = await client.call_tool("t", {"message": f"m{step}"})
            assert result.structured_content is not None
            assert result.structured_content["step"] == step
            assert result.structured_content["instance"] == 1
        assert server.active == 1
    server.wait_active(0)
    server.wait_closes([1])


async def test_initialize_reset_failure_refuses_the_session(serve):
    server = serve(EchoEnv)
    with pytest.raises(BaseExceptionGroup) as info:  # the SDK client raises from its task group
        async with Client(mcp_url(server, "?max_steps=0"), mode="legacy"):
            pass
    leaves = info.value.exceptions
    while leaves and isinstance(leaves[0], BaseExceptionGroup):
        leaves = leaves[0].exceptions
    assert isinstance(leaves[0], MCPError)
    assert "max_steps must be a positive integer" in str(leaves[0])
    server.wait_active(0)


async def test_bad_arguments_env_errors_and_unknown_tools_leave_the_session_usable(serve):
    server = serve(make_env())
    async with Client(mcp_url(server), mode="legacy") as client:
        ok = await client.call_tool("t", {"message": "one"})
        assert ok.structured_content is not None
        assert ok.structured_content["step"] == 1

        bad = await client.call_tool("t", {"sleep_s": "not a number"})
        assert bad.is_error is True
        assert "invalid arguments for tool 't'" in bad.content[0].text

        failed = await client.call_tool("t", {"fail": "kaboom"})
        assert failed.is_error is True
        assert "EXECUTION_ERROR" in failed.content[0].text
        assert "kaboom" in failed.content[0].text

        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("reset", {})

        again = await client.call_tool("t", {"message": "two"})
        assert again.structured_content is not None
        assert again.structured_content["step"] == 2
        assert again.structured_content["instance"] == 1
    server.wait_closes([1])


async def test_concurrent_mcp_sessions_are_isolated(serve):
    server = serve(make_env())

    async def agent(name: str) -> list[tuple[int, int, str]]:
        seen = []
        async with Client(mcp_url(server), mode="legacy") as client:
            for i in range(3):
                r = await client.call_tool("t", {"message": f"{name}{i}", "sleep_s": 0.01})
                assert r.structured_content is not None
                seen.append(
                    (
                        r.structured_content["instance"],
                        r.structured_content["step"],
                        r.structured_content["message"],
                    )
                )
        return seen

    results = await asyncio.gather(*(agent(n) for n in "abc"))
    instances = set()
    for name, seen in zip("abc", results, strict=True):
        (instance,) = {s[0] for s in seen}
        instances.add(instance)
        assert [s[1:] for s in seen] == [(1, f"{name}0"), (2, f"{name}1"), (3, f"{name}2")]
    assert len(instances) == 3
    server.wait_closes([1, 1, 1])


async def test_idle_mcp_session_is_closed(serve):
    server = serve(make_env(), idle_timeout_s=0.5)
    async with Client(mcp_url(server), mode="legacy") as client:
        await client.call_tool("t", {"message": "x"})
        server.wait_closes([1], timeout_s=30)  # the reaper runs within a second or so; a loaded host: more
        with pytest.raises(MCPError):
            await client.call_tool("t", {"message": "y"})


# --- upstream OpenEnv's plain JSON-RPC dialect ----------------------------------------------


def rpc(http: httpx.Client, method: str, params: dict | None = None, rid: int = 1) -> dict:
    body = {"jsonrpc": "2.0", "method": method, "params": params or {}, "id": rid}
    r = http.post("/mcp", json=body)
    assert r.status_code == 200
    return r.json()


def test_upstream_dialect_sessions_and_calls(serve):
    server = serve(make_env())
    with httpx.Client(base_url=server.url, timeout=10) as http:
        tools = rpc(http, "tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == ["t"]
        assert "inputSchema" in tools[0]

        sid = rpc(http, "openenv/session/create")["result"]["session_id"]
        for step in (1, 2):
            result = rpc(http, "tools/call", {"name": "t", "arguments": {"message": "x"}, "session_id": sid})
            assert result["result"]["isError"] is False
            assert result["result"]["data"]["step"] == step  # what MCPToolClient.call_tool returns
            assert result["result"]["structuredContent"] == result["result"]["data"]
        bad = rpc(http, "tools/call", {"name": "t", "arguments": {"nope": 1}, "session_id": sid})
        assert bad["result"]["isError"] is True
        closed = rpc(http, "openenv/session/close", {"session_id": sid})["result"]
        assert closed == {"session_id": sid, "closed": True}
        assert rpc(http, "openenv/session/close", {"session_id": sid})["error"]["code"] == -32602

        throwaway = rpc(http, "tools/call", {"name": "t", "arguments": {"message": "y"}})
        assert throwaway["result"]["data"]["step"] == 1
        assert rpc(http, "initialize")["error"]["code"] == -32601
        server.wait_active(0)
