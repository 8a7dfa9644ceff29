"""The official SDKs through the capture proxy: OpenAI chat and Responses, Anthropic
Messages, Google generateContent; sync and async, streamed and not, text and tool calls.
Each call's recorded ids decode to exactly what the client received."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from openenv.capture import CaptureServer, Session

from ._scripted import END, decode
from .conftest import new_session

openai = pytest.importorskip("openai", reason="the capture extra brings the openai SDK")
anthropic = pytest.importorskip("anthropic", reason="the capture extra brings the anthropic SDK")
genai = pytest.importorskip("google.genai", reason="the capture extra brings google-genai")
from google.genai import types as gtypes  # noqa: E402

pytestmark = pytest.mark.timeout(60)
PROMPT = "héllo, wörld ✓"
TOOL_PROMPT = "please use the tool"
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def last_call(session: Session) -> tuple[str, list[int]]:
    node = session.graph.nodes()[-1]
    assert node.prompt_ids
    assert node.sampled_logprobs is not None
    assert len(node.sampled_logprobs) == len(node.sampled_ids)
    assert node.sampled_ids[-1] == END
    return decode(node.sampled_ids), node.sampled_ids


def assert_text(session: Session, received: str) -> None:
    text, _ = last_call(session)
    assert received == f"reply to: {PROMPT}"
    assert text == received


def assert_tool_call(session: Session, name: str, args: dict[str, Any]) -> None:
    text, _ = last_call(session)
    assert text == "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"
    assert args == {"q": TOOL_PROMPT}


# --- OpenAI chat completions ---------------------------------------------------------------


def oa(proxy: CaptureServer, session: Session) -> Any:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key=session.session_id, max_retries=0)


def oa_async(proxy: CaptureServer, session: Session) -> Any:
    return openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key=session.session_id, max_retries=0)


CHAT_TOOLS = [
    {"type": "function", "function": {"name": "search", "description": "search", "parameters": SCHEMA}}
]


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_sync(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    messages = [{"role": "user", "content": PROMPT}]
    if stream:
        chunks = oa(proxy, session).chat.completions.create(model="m", messages=messages, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = oa(proxy, session).chat.completions.create(model="m", messages=messages)
        text = reply.choices[0].message.content
        assert reply.choices[0].logprobs is None
        assert "token_ids" not in (reply.choices[0].model_extra or {})
    assert_text(session, text)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_async_tool_call(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    messages = [{"role": "user", "content": TOOL_PROMPT}]

    async def run() -> tuple[str, str]:
        client = oa_async(proxy, session)
        if not stream:
            reply = await client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
            call = reply.choices[0].message.tool_calls[0].function
            assert reply.choices[0].finish_reason == "tool_calls"
            return call.name, call.arguments
        name, args = "", ""
        async for chunk in await client.chat.completions.create(
            model="m", messages=messages, tools=CHAT_TOOLS, stream=True
        ):
            for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                name += call.function.name or ""
                args += call.function.arguments or ""
        return name, args

    name, args = asyncio.run(run())
    assert_tool_call(session, name, json.loads(args))


def test_openai_chat_returns_ids_when_the_agent_asks(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    reply = oa(proxy, session).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": PROMPT}],
        logprobs=True,
        extra_body={"return_token_ids": True},
    )
    _, ids = last_call(session)
    assert reply.choices[0].model_extra["token_ids"] == ids
    assert [t.logprob for t in reply.choices[0].logprobs.content] == session.graph.nodes()[
        -1
    ].sampled_logprobs


# --- OpenAI Responses ----------------------------------------------------------------------

RESP_TOOLS = [{"type": "function", "name": "search", "description": "search", "parameters": SCHEMA}]


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_sync(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    client = oa(proxy, session)
    if stream:
        events = list(client.responses.create(model="m", input=PROMPT, stream=True))
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert events[-1].type == "response.completed"
        assert events[-1].response.output_text == text
    else:
        text = client.responses.create(model="m", input=PROMPT, instructions="be brief").output_text
    assert_text(session, text)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_async_tool_call(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)

    async def run() -> Any:
        client = oa_async(proxy, session)
        if not stream:
            return await client.responses.create(model="m", input=TOOL_PROMPT, tools=RESP_TOOLS)
        async with client.responses.stream(model="m", input=TOOL_PROMPT, tools=RESP_TOOLS) as events:
            async for _ in events:
                pass
            return await events.get_final_response()

    reply = asyncio.run(run())
    calls = [item for item in reply.output if item.type == "function_call"]
    assert len(calls) == 1
    assert_tool_call(session, calls[0].name, json.loads(calls[0].arguments))


# --- Anthropic Messages --------------------------------------------------------------------

ANT_TOOLS = [{"name": "search", "description": "search", "input_schema": SCHEMA}]


def ant(proxy: CaptureServer, session: Session) -> Any:
    return anthropic.Anthropic(base_url=proxy.url, api_key=session.session_id, max_retries=0)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_sync(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    kwargs: dict[str, Any] = {
        "model": "m",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    if stream:
        with ant(proxy, session).messages.stream(**kwargs) as s:
            text = "".join(s.text_stream)
            assert s.get_final_message().content[0].text == text
    else:
        reply = ant(proxy, session).messages.create(**kwargs, system="be brief")
        assert reply.stop_reason == "end_turn"
        text = reply.content[0].text
    assert_text(session, text)


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_async_tool_call(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    kwargs: dict[str, Any] = {
        "model": "m",
        "max_tokens": 256,
        "tools": ANT_TOOLS,
        "messages": [{"role": "user", "content": TOOL_PROMPT}],
    }

    async def run() -> Any:
        client = anthropic.AsyncAnthropic(base_url=proxy.url, api_key=session.session_id, max_retries=0)
        if not stream:
            return await client.messages.create(**kwargs)
        async with client.messages.stream(**kwargs) as s:
            return await s.get_final_message()

    reply = asyncio.run(run())
    assert reply.stop_reason == "tool_use"
    block = next(b for b in reply.content if b.type == "tool_use")
    assert_tool_call(session, block.name, block.input)


def test_anthropic_system_message_mid_conversation(proxy: CaptureServer, backend: Any) -> None:
    """Claude Code (2.1) sends ``{"role": "system"}`` among the messages: forwarded as a
    chat system message in its place (was a 400: "each message needs a role")."""
    session = new_session(proxy)
    messages: list[Any] = [
        {"role": "user", "content": "first"},
        {"role": "system", "content": "context for the model"},
        {"role": "user", "content": PROMPT},
    ]
    reply = ant(proxy, session).messages.create(model="m", max_tokens=256, messages=messages)
    assert [m["role"] for m in backend.calls[-1]["messages"]] == ["user", "system", "user"]
    assert backend.calls[-1]["messages"][1]["content"] == "context for the model"
    assert_text(session, reply.content[0].text)


# --- Google generateContent ----------------------------------------------------------------

G_TOOLS = [
    gtypes.Tool(
        function_declarations=[
            gtypes.FunctionDeclaration(name="search", description="search", parameters_json_schema=SCHEMA)
        ]
    )
]


def gclient(proxy: CaptureServer, session: Session) -> Any:
    return genai.Client(api_key=session.session_id, http_options=gtypes.HttpOptions(base_url=proxy.url))


@pytest.mark.parametrize("stream", [False, True])
def test_google_sync(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    client = gclient(proxy, session)
    config = gtypes.GenerateContentConfig(system_instruction="be brief", max_output_tokens=256)
    if stream:
        chunks = client.models.generate_content_stream(model="gemini-x", contents=PROMPT, config=config)
        text = "".join(c.text or "" for c in chunks)
    else:
        text = client.models.generate_content(model="gemini-x", contents=PROMPT, config=config).text
    assert_text(session, text)


@pytest.mark.parametrize("stream", [False, True])
def test_google_async_tool_call(proxy: CaptureServer, stream: bool) -> None:
    session = new_session(proxy)
    config = gtypes.GenerateContentConfig(tools=G_TOOLS)

    async def run() -> list[Any]:
        client = gclient(proxy, session)  # held: a Client closes its transport when collected
        models = client.aio.models
        if not stream:
            reply = await models.generate_content(model="gemini-x", contents=TOOL_PROMPT, config=config)
            return list(reply.function_calls or [])
        calls: list[Any] = []
        async for chunk in await models.generate_content_stream(
            model="gemini-x", contents=TOOL_PROMPT, config=config
        ):
            calls += chunk.function_calls or []
        return calls

    calls = asyncio.run(run())
    assert len(calls) == 1
    assert_tool_call(session, calls[0].name, dict(calls[0].args))
