"""ScriptedBackend: a TEST DOUBLE of a vLLM-style chat completions server, over real HTTP.

Token ids are UTF-8 bytes (0-255) plus four specials, so any id list decodes without a
tokenizer: ``decode`` keeps the bytes and drops the specials. A chat renders as, per
message, ``<start> role <sep> content [<tool_call>{json}</tool_call>...] <end>``, then
``<start> assistant <sep>`` for the reply; the reply is sampled as its bytes then
``<end>``, so turn k+1's prompt begins with turn k's prompt + sampled ids exactly (a
multi-turn conversation links by prefix). Replies are scripted, not sampled:

* with tools offered and the last user message containing "use the tool": a call of
  the first tool with ``{"q": <that message>}``;
* otherwise ``"reply to: " + <the last message's content>``.

``mode`` makes it fail on purpose: ``"500"`` answers 500, ``"cut"`` sends half a reply
then drops the connection, ``"text"`` returns no ids or logprobs (a hosted API),
``"no-capture-params"`` answers 400 to a request carrying ``return_token_ids``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

START, SEP, END, TOOLS = 256, 257, 258, 259
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def encode(text: str) -> list[int]:
    return list(text.encode())


def decode(ids: list[int]) -> str:
    return bytes(i for i in ids if i < 256).decode()


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
        call = {"name": tools[0]["function"]["name"], "arguments": {"q": content}}
        return "<tool_call>" + json.dumps(call) + "</tool_call>"
    return "reply to: " + content


def logprob(i: int, token: int) -> float:
    return -((token * 7 + i) % 13) / 10 - 0.01


class ScriptedBackend:
    """The app and its knobs; ``calls`` holds every request body it received."""

    def __init__(self, model: str = "scripted-1") -> None:
        self.model = model
        self.url = ""  # its /v1 base URL, once served
        self.mode = "ok"
        self.calls: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ]
        )

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
        out: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.calls)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(sampled),
                "total_tokens": len(prompt) + len(sampled),
            },
        }
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
        if self.mode == "cut":
            data = json.dumps(out).encode()
            return StreamingResponse(_cut(data), media_type="application/json")
        return JSONResponse(out)


async def _cut(data: bytes):  # type: ignore[no-untyped-def]
    yield data[: len(data) // 2]
    raise ConnectionResetError("scripted: the backend drops the connection halfway")
