"""Calls link into a graph by exact token prefix: a multi-turn conversation (tool calls
and their results included) is one path in every dialect; continuing an earlier call
differently forks it; an edited history starts a new root."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from openenv.capture import CaptureServer, RolloutGraph, Session, TurnNode

from .conftest import new_session
from .test_sdks import ANT_TOOLS, CHAT_TOOLS, G_TOOLS, RESP_TOOLS, TOOL_PROMPT, ant, gclient, oa

gtypes = pytest.importorskip("google.genai.types", reason="the capture extra brings google-genai")
pytestmark = pytest.mark.timeout(60)


def assert_one_path(session: Session, turns: int) -> None:
    graph = session.graph
    nodes = graph.nodes()
    assert len(nodes) == turns
    assert graph.stats() == {"n_turns": turns, "n_roots": 1, "n_leaves": 1, "n_forks": 0, "n_discarded": 0}
    assert [n.parent_id for n in nodes] == [None, *[n.node_id for n in nodes[:-1]]]
    for parent, child in itertools.pairwise(nodes):
        assert child.prompt_ids[: len(parent.end_ids)] == parent.end_ids


def test_openai_chat_three_turns_with_a_tool_round_trip(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    client = oa(proxy, session)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": TOOL_PROMPT},
    ]
    first = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS).choices[0].message
    call = first.tool_calls[0]
    messages += [
        first.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "result 42"},
    ]
    second = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS).choices[0].message
    assert second.content == "reply to: result 42"
    messages += [{"role": "assistant", "content": second.content}, {"role": "user", "content": "thanks"}]
    client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
    assert_one_path(session, 3)


def test_openai_responses_tool_round_trip(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    client = oa(proxy, session)
    items: list[Any] = [{"role": "user", "content": TOOL_PROMPT}]
    first = client.responses.create(model="m", input=items, tools=RESP_TOOLS)
    call = next(i for i in first.output if i.type == "function_call")
    items += [
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "result 42"},
    ]
    assert (
        client.responses.create(model="m", input=items, tools=RESP_TOOLS).output_text == "reply to: result 42"
    )
    assert_one_path(session, 2)


def test_anthropic_tool_round_trip(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    client = ant(proxy, session)
    messages: list[dict[str, Any]] = [{"role": "user", "content": TOOL_PROMPT}]
    first = client.messages.create(model="m", max_tokens=256, tools=ANT_TOOLS, messages=messages)
    use = next(b for b in first.content if b.type == "tool_use")
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "result 42"}]},
    ]
    second = client.messages.create(model="m", max_tokens=256, tools=ANT_TOOLS, messages=messages)
    assert second.content[0].text == "reply to: result 42"
    assert_one_path(session, 2)


def test_google_tool_round_trip(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    client = gclient(proxy, session)
    config = gtypes.GenerateContentConfig(tools=G_TOOLS)
    contents: list[Any] = [gtypes.Content(role="user", parts=[gtypes.Part(text=TOOL_PROMPT)])]
    first = client.models.generate_content(model="gemini-x", contents=contents, config=config)
    call = first.function_calls[0]
    result = gtypes.Part(
        function_response=gtypes.FunctionResponse(id=call.id, name=call.name, response={"r": 42})
    )
    contents += [first.candidates[0].content, gtypes.Content(role="user", parts=[result])]
    second = client.models.generate_content(model="gemini-x", contents=contents, config=config)
    assert second.text == "reply to: " + json.dumps({"r": 42})
    assert_one_path(session, 2)


def test_a_prefix_change_starts_a_branch(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    client = oa(proxy, session)
    base = [{"role": "system", "content": "sys"}, {"role": "user", "content": "one"}]
    first = client.chat.completions.create(model="m", messages=base).choices[0].message.content
    history = [*base, {"role": "assistant", "content": first}]
    client.chat.completions.create(model="m", messages=[*history, {"role": "user", "content": "two"}])
    client.chat.completions.create(model="m", messages=[*history, {"role": "user", "content": "two, again"}])
    t1, t2, t2b = session.graph.nodes()
    assert t2.parent_id == t1.node_id
    assert t2b.parent_id == t1.node_id
    assert session.graph.forks() == [(t1.node_id, [t2.node_id, t2b.node_id])]
    edited = [{"role": "system", "content": "another system prompt"}, *history[1:]]
    client.chat.completions.create(model="m", messages=[*edited, {"role": "user", "content": "two"}])
    assert session.graph.nodes()[-1].parent_id is None  # an edited history: a new root
    assert session.graph.stats()["n_roots"] == 2


def test_a_continued_sibling_marks_the_dropped_one_discarded() -> None:
    graph = RolloutGraph()
    a = graph.add_turn(TurnNode("a", [1, 2], [3], [-0.1]))
    b = graph.add_turn(TurnNode("b", [1, 2, 3, 4], [5], [-0.2]))  # retried: b is dropped
    c = graph.add_turn(TurnNode("c", [1, 2, 3, 4], [6], [-0.3]))
    d = graph.add_turn(TurnNode("d", [1, 2, 3, 4, 6, 7], [8], [-0.4]))
    assert (b.parent_id, c.parent_id, d.parent_id) == ("a", "a", "c")
    assert [n.node_id for n in graph.discarded_nodes()] == ["b"]
    seq = graph.sequence_for("d")
    assert seq.input_ids == [1, 2, 3, 4, 6, 7, 8]
    assert seq.loss_mask == [0, 0, 1, 0, 1, 0, 1]
    assert seq.logprobs == [0.0, 0.0, -0.1, 0.0, -0.3, 0.0, -0.4]
    assert seq.turn_lengths() == [1, 1, 1]
    assert a.index == 0
