"""Anthropic Messages (``POST /v1/messages``), read into chat completions and written back.

``system`` is the system message; ``text`` blocks are content, ``tool_use`` blocks are
tool calls, ``tool_result`` blocks are tool messages; ``tools`` (``input_schema``)
become chat tools. A stream is Anthropic's event sequence (``message_start`` ...
``message_stop``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ._base import ChatReply, need, pieces, sse
from ._writers import AnthropicWriter

_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    need(isinstance(content, list), "content must be a string or a list of blocks")
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


def _message(role: str, content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    need(isinstance(content, list), "content must be a string or a list of blocks")
    out: list[dict[str, Any]] = []
    text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
    calls = [
        {
            "id": b.get("id"),
            "type": "function",
            "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})},
        }
        for b in content
        if b.get("type") == "tool_use"
    ]
    for block in content:
        if block.get("type") == "tool_result":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": block.get("tool_use_id"),
                    "content": _text(block.get("content", "")),
                }
            )
    if text or calls or not out:
        message: dict[str, Any] = {"role": role, "content": text or None}
        if calls:
            message["tool_calls"] = calls
        out.append(message)
    return out


_ROLES = ("user", "assistant", "system")  # Claude Code sends system messages mid-conversation


class AnthropicMessages:
    name = "anthropic"

    def to_chat(self, body: dict[str, Any], path: str) -> dict[str, Any]:
        need(
            isinstance(body.get("messages"), list) and bool(body["messages"]),
            "messages: must be a non-empty list",
        )
        need(isinstance(body.get("max_tokens"), int), "max_tokens: Field required")
        messages: list[dict[str, Any]] = []
        if body.get("system"):
            messages.append({"role": "system", "content": _text(body["system"])})
        for m in body["messages"]:
            role = m.get("role") if isinstance(m, dict) else None
            need(role in _ROLES, "each message needs a role: " + ", ".join(_ROLES))
            if role == "system":
                messages.append({"role": "system", "content": _text(m.get("content", ""))})
            else:
                messages += _message(m["role"], m.get("content", ""))
        chat: dict[str, Any] = {
            "model": body.get("model", ""),
            "messages": messages,
            "max_tokens": body["max_tokens"],
        }
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema") or {},
                },
            }
            for t in body.get("tools") or []
            if "name" in t
        ]
        if tools:
            chat["tools"] = tools
        for src, dst in (("temperature", "temperature"), ("top_p", "top_p"), ("stop_sequences", "stop")):
            if body.get(src) is not None:
                chat[dst] = body[src]
        return chat

    def wants_stream(self, body: dict[str, Any], path: str, query: Mapping[str, str]) -> bool:
        return bool(body.get("stream"))

    def _blocks(self, chat: ChatReply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": chat.text}] if chat.text else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args()} for c in chat.tool_calls
        ]
        return blocks

    def _head(self, chat: ChatReply) -> dict[str, Any]:
        return {"id": f"msg_{chat.id}", "type": "message", "role": "assistant", "model": chat.model}

    def reply(self, chat: ChatReply, body: dict[str, Any]) -> dict[str, Any]:
        return {
            **self._head(chat),
            "content": self._blocks(chat),
            "stop_reason": _STOP.get(chat.finish_reason, "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": chat.prompt_tokens, "output_tokens": chat.completion_tokens},
        }

    def events(self, chat: ChatReply, body: dict[str, Any]) -> Iterator[str]:
        def ev(kind: str, **data: Any) -> str:
            return sse({"type": kind, **data}, event=kind)

        start = {
            **self._head(chat),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": chat.prompt_tokens, "output_tokens": 0},
        }
        yield ev("message_start", message=start)
        for i, block in enumerate(self._blocks(chat)):
            if block["type"] == "text":
                yield ev("content_block_start", index=i, content_block={"type": "text", "text": ""})
                for piece in pieces(block["text"]):
                    yield ev("content_block_delta", index=i, delta={"type": "text_delta", "text": piece})
            else:
                yield ev("content_block_start", index=i, content_block={**block, "input": {}})
                for piece in pieces(json.dumps(block["input"])):
                    yield ev(
                        "content_block_delta",
                        index=i,
                        delta={"type": "input_json_delta", "partial_json": piece},
                    )
            yield ev("content_block_stop", index=i)
        stop = {"stop_reason": _STOP.get(chat.finish_reason, "end_turn"), "stop_sequence": None}
        yield ev("message_delta", delta=stop, usage={"output_tokens": chat.completion_tokens})
        yield ev("message_stop")

    def streamer(self, body: dict[str, Any]) -> AnthropicWriter:
        return AnthropicWriter(body, self.error)

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            404: "not_found_error",
            429: "rate_limit_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
