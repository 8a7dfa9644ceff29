"""An env's /schema as what a policy may do: the RFC 0002 text field and tools."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from openenv._exceptions import PolicyError
from openenv.policy import ActionSpace, observation_text, parse_tool_calls
from openenv.server import create_app, serve_in_background
from openenv.server._serve import load_env_class, resolve_target

ROOT = Path(__file__).resolve().parents[2]


def _space(env: str) -> ActionSpace:
    cls = load_env_class(*resolve_target(str(ROOT / "envs" / env)))
    with serve_in_background(create_app(cls)) as server:
        return ActionSpace.from_schema(json.loads(urllib.request.urlopen(server.url + "/schema").read()))


@pytest.fixture(scope="module")
def terminal() -> ActionSpace:
    return _space("terminal_env")


def test_a_tagged_union_is_one_tool_per_member_named_by_its_tag(terminal: ActionSpace) -> None:
    names = {t.name for t in terminal.tools}
    assert names == {"run", "send_keys", "read", "interrupt", "restart", "write_file", "read_file", "submit"}
    run = terminal.tool("run")
    assert run.parameters["required"] == ["command"]
    assert "type" not in run.parameters["properties"]
    assert "metadata" not in run.parameters["properties"]
    assert terminal.action_from_call("run", '{"command": "ls"}') == {"command": "ls", "type": "run"}
    assert terminal.action_from_call("submit", {}) == {"type": "submit"}
    assert terminal.text_field == "command"  # run may leave out its tag: the default member (RFC 0002)
    assert "$ref" not in json.dumps([t.openai() for t in terminal.tools])


def test_a_plain_model_is_one_tool_and_maybe_a_text_field() -> None:
    echo, coding = _space("echo_env"), _space("coding_env")
    assert [t.name for t in echo.tools] == ["echo_action"]
    assert echo.text_field == "message"
    assert echo.action_from_text("hi") == {"message": "hi"}
    assert [t.name for t in coding.tools] == ["code_action"]
    assert coding.text_field is None  # `code` is not required: not a text env
    with pytest.raises(PolicyError, match="not a text env"):
        coding.action_from_text("print(1)")


def test_bad_tool_calls_are_policy_errors(terminal: ActionSpace) -> None:
    with pytest.raises(PolicyError, match="tool 'rm'"):
        terminal.action_from_call("rm", {})
    with pytest.raises(PolicyError, match="not JSON"):
        terminal.action_from_call("run", "{oops")


def test_observation_text_prefers_the_prompt() -> None:
    assert observation_text({"prompt": "2 + 2 =", "reward": 0.0}) == "2 + 2 ="
    assert observation_text({"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}) == "a\nb"
    shown = json.loads(
        observation_text({"echoed_message": "hi", "done": False, "reward": 1.0, "metadata": {}})
    )
    assert shown == {"echoed_message": "hi"}


def test_tool_calls_in_text() -> None:
    call = '<tool_call>{"name": "run", "arguments": {"command": "ls"}}</tool_call>'
    text = f"ok {call} <tool_call>{{bad}}</tool_call>"
    assert parse_tool_calls(text) == [{"name": "run", "arguments": {"command": "ls"}}]


def test_an_mcp_env_lists_its_own_tools_at_reset() -> None:
    # upstream's MCP envs: a union of list_tools and call_tool {tool_name, arguments}
    schema = {
        "action": {
            "oneOf": [{"$ref": "#/$defs/ListTools"}, {"$ref": "#/$defs/CallTool"}],
            "$defs": {
                "ListTools": {"properties": {"type": {"const": "list_tools"}}, "required": ["type"]},
                "CallTool": {
                    "properties": {
                        "type": {"const": "call_tool"},
                        "tool_name": {"type": "string"},
                        "arguments": {"type": "object"},
                    },
                    "required": ["type", "tool_name"],
                },
            },
        }
    }
    space = ActionSpace.from_schema(schema)
    assert space.for_observation({"metadata": {}}) is space  # nothing listed: the schema's own tools
    listed = {
        "metadata": {"tools": [{"name": "add", "description": "Add.", "inputSchema": {"type": "object"}}]}
    }
    mcp = space.for_observation(listed)
    assert [t.name for t in mcp.tools] == ["add"]
    assert mcp.text_field is None
    assert mcp.action_from_call("add", {"a": 1}) == {
        "type": "call_tool",
        "tool_name": "add",
        "arguments": {"a": 1},
    }
