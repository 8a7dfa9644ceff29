"""``SessionMCPBridge``: a session's tools answered as MCP JSON-RPC."""

from __future__ import annotations

from typing import Any

import pytest

from openenv.core.harness import SessionMCPBridge, ToolResult

from ._game import GameClient, game_session


def _call(bridge: SessionMCPBridge, params: Any, rid: Any = 7) -> dict[str, Any]:
    return bridge.handle_request({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def test_tools_list_in_mcp_shape() -> None:
    reply = SessionMCPBridge(game_session(GameClient())).handle_request(
        {"jsonrpc": "2.0", "id": "a", "method": "tools/list"}
    )
    assert reply["id"] == "a"
    (tool,) = reply["result"]["tools"]
    assert tool["name"] == "guess"
    assert tool["inputSchema"]["required"] == ["n"]


def test_tools_call_returns_the_tool_result() -> None:
    client = GameClient(secret=6)
    reply = _call(SessionMCPBridge(game_session(client)), {"name": "guess", "arguments": {"n": 6}})
    assert reply["id"] == 7
    result = reply["result"]
    assert (result["done"], result["metadata"]["reward"], result["error"]) == (True, 1.0, None)
    assert result["data"]["observation"] == {"hint": "yes"}


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        ({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "resources/list"}, -32601),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}, -32602),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "reset"}}, -32602),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "shout"}}, -32601),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "guess"}}, -32602),
    ],
)
def test_errors_are_json_rpc_errors(request_: dict[str, Any], code: int) -> None:
    reply = SessionMCPBridge(game_session(GameClient())).handle_request(request_)
    assert reply["error"]["code"] == code
    assert "result" not in reply


def test_a_value_error_from_the_session_is_invalid_params() -> None:
    session = game_session(GameClient())

    def strict(name: str, arguments: dict[str, Any]) -> ToolResult:
        raise ValueError("n must be an int")

    session.call_tool = strict  # type: ignore[method-assign]
    reply = _call(SessionMCPBridge(session), {"name": "guess", "arguments": {"n": "x"}})
    assert reply["error"] == {"code": -32602, "message": "n must be an int", "data": None}


def test_a_failing_env_is_an_internal_error() -> None:
    session = game_session(GameClient())

    def broken(name: str, arguments: dict[str, Any]) -> ToolResult:
        raise ConnectionError("env went away")

    session.call_tool = broken  # type: ignore[method-assign]
    reply = _call(SessionMCPBridge(session), {"name": "guess", "arguments": {"n": 1}})
    assert reply["error"]["code"] == -32603
    assert reply["error"]["message"] == "env went away"
