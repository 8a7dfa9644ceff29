"""The Responses tool forms an agent sends (Codex CLI: MCP servers' tools in ``namespace``
tools, ``custom`` free-form tools, hosted tools) reach a chat backend as chat functions,
and the backend's call comes back, through the official ``openai`` SDK, as the item the
agent expects: a namespaced ``function_call`` or a ``custom_tool_call``; sent back in the
history, the conversation links as one path."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openenv.capture import CaptureServer

from .conftest import new_session
from .test_graph import assert_one_path
from .test_sdks import SCHEMA, TOOL_PROMPT, oa

pytestmark = pytest.mark.timeout(60)

GRAMMAR = {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /(.|\\n)*/'}
SAY = {"type": "function", "name": "say", "description": "Say it.", "parameters": SCHEMA}
NAMESPACE = {"type": "namespace", "name": "mcp__env", "description": "The env's tools.", "tools": [SAY]}
PATCH = {"type": "custom", "name": "apply_patch", "description": "Patch files.", "format": GRAMMAR}
HOSTED = {"type": "web_search", "external_web_access": True}


def _create(client: Any, stream: bool, **kwargs: Any) -> Any:
    """The reply, streamed or not (streamed: the completed response, after its events)."""
    if not stream:
        return client.responses.create(model="m", **kwargs)
    events = list(client.responses.create(model="m", stream=True, **kwargs))
    assert events[-1].type == "response.completed"
    return events


@pytest.mark.parametrize("stream", [False, True])
def test_a_namespace_tool_is_called_by_its_own_name_in_its_namespace(
    proxy: CaptureServer, stream: bool
) -> None:
    session = new_session(proxy)
    client = oa(proxy, session)
    items: list[Any] = [{"role": "user", "content": TOOL_PROMPT}]
    got = _create(client, stream, input=items, tools=[HOSTED, NAMESPACE, PATCH])
    reply = got[-1].response if stream else got
    node = session.graph.nodes()[-1]
    # the hosted tool is not the backend's to run; the others are chat functions
    assert [t["function"]["name"] for t in node.request_tools or []] == ["mcp__env__say", "apply_patch"]
    assert "lark grammar" in (node.request_tools or [])[1]["function"]["description"]
    assert node.response_message["tool_calls"][0]["function"]["name"] == "mcp__env__say"
    (call,) = [i for i in reply.output if i.type == "function_call"]
    assert (call.name, call.namespace) == ("say", "mcp__env")
    if stream:
        added = next(e for e in got if e.type == "response.output_item.added")
        assert (added.item.name, added.item.namespace) == ("say", "mcp__env")
        done = next(e for e in got if e.type == "response.function_call_arguments.done")
        assert done.arguments == call.arguments
    items += [
        {"type": "function_call", "call_id": call.call_id, "name": "say", "namespace": "mcp__env",
         "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "result 42"},
    ]  # fmt: skip
    second = client.responses.create(model="m", input=items, tools=[HOSTED, NAMESPACE, PATCH])
    assert second.output_text == "reply to: result 42"
    assert_one_path(session, 2)


@pytest.mark.parametrize("stream", [False, True])
def test_a_custom_tool_is_called_with_its_free_form_input(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    client = oa(proxy, session)
    items: list[Any] = [{"role": "user", "content": TOOL_PROMPT}]
    got = _create(client, stream, input=items, tools=[PATCH, NAMESPACE])
    reply = got[-1].response if stream else got
    (call,) = [i for i in reply.output if i.type == "custom_tool_call"]
    assert (call.name, call.input) == ("apply_patch", TOOL_PROMPT)
    if stream:
        done = next(e for e in got if e.type == "response.custom_tool_call_input.done")
        assert done.input == TOOL_PROMPT
    items += [
        {"type": "custom_tool_call", "call_id": call.call_id, "name": "apply_patch", "input": call.input},
        {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "patched"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
    ]
    second = client.responses.create(model="m", input=items, tools=[PATCH, NAMESPACE])
    assert second.output_text == "reply to: patched"
    assert_one_path(session, 2)


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ({"type": "namespace", "name": "mcp__env"}, "namespace 'mcp__env' needs a list of 'tools'"),
        ({"type": "namespace", "tools": [SAY]}, "a namespace tool needs a 'name'"),
        ({"type": "custom", "description": "no name"}, "a custom tool needs a 'name'"),
    ],
)
def test_a_malformed_tool_is_400_saying_which(proxy: CaptureServer, tool: dict[str, Any], why: str) -> None:
    session = new_session(proxy)
    body = {"model": "m", "input": TOOL_PROMPT, "tools": [tool]}
    reply = httpx.post(
        proxy.url + "/v1/responses", json=body, headers={"authorization": f"Bearer {session.session_id}"}
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["message"] == f"bad request: {why}"
    assert session.graph.nodes() == []
