"""ScriptedBackend: a TEST DOUBLE of a vLLM-style chat completions server, over real HTTP.

Token ids are UTF-8 bytes (0-255) plus four specials, so any id list decodes without a
tokenizer: ``decode`` keeps the bytes and drops the specials (ids, logprobs and the reply's
body are those of ``openenv.harness._scripted``; the rendering here marks tool calls up).
A chat renders as, per message, ``<start> role <sep> content [<tool_call>{json}</tool_call>...] <end>``, then
``<start> assistant <sep>`` for the reply; the reply is sampled as its bytes then
``<end>``, so turn k+1's prompt begins with turn k's prompt + sampled ids exactly (a
multi-turn conversation links by prefix). Replies are scripted, not sampled:

* with tools offered and the last user message containing "use the tool": a call of
  the first tool with ``{"q": <that message>}`` (``{"input": ...}`` when the tool's
  parameters have ``input``: a Responses custom tool as the proxy forwards it);
* otherwise ``"reply to: " + <the last message's content>``.

With ``stream: true`` it streams as vLLM does: ``prompt_token_ids`` on the first chunk,
then one chunk per sampled id with its ``token_ids`` and ``logprobs`` (its text piece as
content; a tool call reply sends no content but one ``tool_calls`` chunk, its arguments
in two pieces, after the ids), the finish reason, the usage when asked, ``[DONE]``.

``mode`` makes it fail on purpose: ``"500"`` answers 500, ``"cut"`` sends half a reply
(or half a stream) then drops the connection, ``"text"`` returns no ids or logprobs (a hosted API),
``"no-capture-params"`` answers 400 to a request carrying ``return_token_ids``;
``"hold"`` stops halfway (a stream after half its chunks, a plain reply before it is
sent) until ``release`` is set, ``holding`` true meanwhile (10 s at most: then
``held_out``).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
import threading
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from openenv.harness._scripted import END, SEP, START, TOOLS, chat_completion, decode, logprob

__all__ = ["END", "ScriptedBackend", "decode", "encode", "render", "script"]

_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def encode(text: str) -> list[int]:
    return list(text.encode())


def _render_message(m: dict[str, Any]) -> list[int]:
    text = m.get("content") or ""
    if isinstance(text, list):
        text = "".join(p.get("text", "") for p in text)
    for call in m.get("tool_calls") or []:
        fn = call["function"]
        text += (
            "<tool_call>"
            + json.dumps({"name": fn["name"], "arguments": json.loads(fn["arguments"])})
            + "</tool_call>"
        )
    return [START, *encode(m["role"]), SEP, *encode(text), END]


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
    ids: list[int] = []
    if tools:
        ids += [TOOLS, *encode(json.dumps([t["function"]["name"] for t in tools])), END]
    for m in messages:
        ids += _render_message(m)
    return [*ids, START, *encode("assistant"), SEP]


def script(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    last = messages[-1]
    content = last.get("content") or ""
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content)
    if tools and last["role"] == "user" and "use the tool" in content:
        fn = tools[0]["function"]
        key = "input" if "input" in ((fn.get("parameters") or {}).get("properties") or {}) else "q"
        call = {"name": fn["name"], "arguments": {key: content}}
        return "<tool_call>" + json.dumps(call) + "</tool_call>"
    return "reply to: " + content


class ScriptedBackend:
    """The app and its knobs; ``calls`` holds every request body it received."""

    def __init__(self, model: str = "scripted-1") -> None:
        self.model = model
        self.url = ""  # its /v1 base URL, once served
        self.mode = "ok"
        self.calls: list[dict[str, Any]] = []
        self.release = threading.Event()
        self.holding = self.held_out = False
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ]
        )

    async def _hold(self) -> None:
        self.holding = True
        deadline = time.monotonic() + 10
        while not self.release.is_set() and time.monotonic() < deadline:  # noqa: ASYNC110 (a threading.Event, set from the test's thread)
            await asyncio.sleep(0.01)
        self.held_out = not self.release.is_set()
        self.holding = False

    async def _send(self, chunks: list[str]):  # type: ignore[no-untyped-def]
        for n, c in enumerate(chunks):
            if self.mode == "hold" and n == len(chunks) // 2:
                await self._hold()
            yield c
        if self.mode == "cut":
            raise ConnectionResetError("scripted: the backend drops its stream halfway")

    async def models(self, request: Request) -> Response:
        return JSONResponse(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "test"}]}
        )

    async def chat(self, request: Request) -> Response:
        body = await request.json()
        self.calls.append(body)
        if self.mode == "500":
            return JSONResponse({"error": {"message": "scripted failure", "type": "server_error"}}, 500)
        if self.mode == "no-capture-params" and "return_token_ids" in body:
            return JSONResponse({"error": {"message": "unknown field return_token_ids"}}, 400)
        tools = body.get("tools")
        prompt = render(body["messages"], tools)
        text = script(body["messages"], tools)
        limit = int(body.get("max_tokens") or 1 << 20)
        sampled = [*encode(text), END][:limit]
        finish = "stop" if sampled and sampled[-1] == END else "length"
        shown = decode(sampled)
        calls = [json.loads(c) for c in _CALL.findall(shown)]
        message: dict[str, Any] = {"role": "assistant", "content": _CALL.sub("", shown) or None}
        if calls:
            finish = "tool_calls"
            message["tool_calls"] = [
                {
                    "id": f"call_{len(self.calls)}_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                }
                for i, c in enumerate(calls)
            ]
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        out = chat_completion(f"chatcmpl-{len(self.calls)}", self.model, choice, len(prompt), len(sampled))
        if self.mode != "text":
            if body.get("logprobs"):
                choice["logprobs"] = {
                    "content": [
                        {"token": f"token_id:{t}", "logprob": logprob(i, t), "bytes": [], "top_logprobs": []}
                        for i, t in enumerate(sampled)
                    ]
                }
            if body.get("return_token_ids"):
                choice["token_ids"] = sampled
                out["prompt_token_ids"] = prompt
        if body.get("stream"):
            chunks = _chunks(out, body, prompt, sampled)
            if self.mode == "cut":
                chunks = chunks[: len(chunks) // 2]
            return StreamingResponse(self._send(chunks), media_type="text/event-stream")
        if self.mode == "hold":
            await self._hold()
        if self.mode == "cut":
            data = json.dumps(out).encode()
            return StreamingResponse(_cut(data), media_type="application/json")
        return JSONResponse(out)


async def _cut(data: bytes):  # type: ignore[no-untyped-def]
    yield data[: len(data) // 2]
    raise ConnectionResetError("scripted: the backend drops the connection halfway")


def _chunks(out: dict[str, Any], body: dict[str, Any], prompt: list[int], sampled: list[int]) -> list[str]:
    head = {k: out[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    choice = out["choices"][0]
    message = choice["message"]
    want_ids = body.get("return_token_ids") and "token_ids" in choice
    want_lps = choice["logprobs"] is not None

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        c = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None, **extra}
        return "data: " + json.dumps({**head, "choices": [c]}) + "\n\n"

    first = {
        **head,
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
    }
    if want_ids:
        first["prompt_token_ids"] = prompt
    chunks = ["data: " + json.dumps(first) + "\n\n"]
    text = codecs.getincrementaldecoder("utf-8")()
    for i, token in enumerate(sampled):
        piece = text.decode(bytes([token])) if token < 256 and not message.get("tool_calls") else ""
        extra: dict[str, Any] = {"token_ids": [token]} if want_ids else {}
        if want_lps:
            extra["logprobs"] = {"content": [choice["logprobs"]["content"][i]]}
        chunks.append(chunk({"content": piece} if piece else {}, **extra))
    for j, call in enumerate(message.get("tool_calls") or []):
        args = call["function"]["arguments"]
        half = len(args) // 2
        fn = {"name": call["function"]["name"], "arguments": args[:half]}
        chunks.append(
            chunk({"tool_calls": [{"index": j, "id": call["id"], "type": "function", "function": fn}]})
        )
        chunks.append(chunk({"tool_calls": [{"index": j, "function": {"arguments": args[half:]}}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append("data: " + json.dumps({**head, "choices": [], "usage": out["usage"]}) + "\n\n")
    return [*chunks, "data: [DONE]\n\n"]
