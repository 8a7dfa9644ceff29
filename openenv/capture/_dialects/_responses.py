"""OpenAI Responses (``POST /v1/responses``), read into chat completions and written back.

Input items: messages (text content or ``input_text`` / ``output_text`` parts),
``function_call`` / ``custom_tool_call`` and their outputs; ``reasoning`` items (opaque to
a chat backend) are left out; ``instructions`` is the system message. Function, namespace
and custom ``tools`` become chat tools (``_responses_tools``). The reply is one ``message``
output item and one ``function_call`` (or ``custom_tool_call``) item per tool call, named
as the agent named the tool; a stream is the Responses event sequence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._errors import BadRequest
from ._base import ChatReply, need, pieces, sse
from ._responses_tools import ToolMap, chat_name, custom_arguments
from ._writers import ResponsesWriter


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    need(isinstance(content, list), "message content must be a string or a list of parts")
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    if not isinstance(items, list) or not items:
        raise BadRequest("'input' must be a string or a non-empty list of items")
    for item in items:
        need(isinstance(item, dict), "each input item must be an object")
        kind = item.get("type", "message")
        if kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role", "user")
            out.append({"role": role, "content": _text(item.get("content", ""))})
        elif kind in ("function_call", "custom_tool_call"):
            custom = kind == "custom_tool_call"
            name = chat_name(item.get("namespace"), str(item.get("name") or ""))
            arguments = custom_arguments(item.get("input", "")) if custom else item.get("arguments") or "{}"
            call = {
                "id": item.get("call_id"),
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            if out and out[-1]["role"] == "assistant" and "tool_call_id" not in out[-1]:
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "reasoning":
            continue
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": _text(item.get("output", "")),
                }
            )
        else:
            need(False, f"unsupported input item type {kind!r}")
    return out


class OpenAIResponses:
    name = "openai_responses"

    def to_chat(self, body: dict[str, Any], path: str) -> dict[str, Any]:
        chat: dict[str, Any] = {"model": body.get("model", ""), "messages": _messages(body)}
        tools = self.tools(body).chat
        if tools:
            chat["tools"] = tools
        for src, dst in (
            ("max_output_tokens", "max_tokens"),
            ("temperature", "temperature"),
            ("top_p", "top_p"),
        ):
            if body.get(src) is not None:
                chat[dst] = body[src]
        return chat

    def wants_stream(self, body: dict[str, Any], path: str, query: Mapping[str, str]) -> bool:
        return bool(body.get("stream"))

    def tools(self, body: dict[str, Any]) -> ToolMap:
        """The request's tools as chat tools, and how a call of each comes back."""
        return ToolMap(body.get("tools"))

    def _items(self, chat: ChatReply, body: dict[str, Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if chat.text or not chat.tool_calls:
            part = {"type": "output_text", "text": chat.text, "annotations": [], "logprobs": []}
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{chat.id}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [part],
                }
            )
        if chat.tool_calls:
            tools = self.tools(body)
            items += [tools.item(call.id, call.name, call.arguments) for call in chat.tool_calls]
        return items

    def reply(self, chat: ChatReply, body: dict[str, Any], *, status: str = "completed") -> dict[str, Any]:
        done = status == "completed"
        return {
            "id": f"resp_{chat.id}",
            "object": "response",
            "created_at": chat.created,
            "status": status,
            "model": chat.model,
            "output": self._items(chat, body) if done else [],
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "instructions": body.get("instructions"),
            "incomplete_details": None if chat.finish_reason != "length" else {"reason": "max_output_tokens"},
            "error": None,
            "metadata": {},
            "usage": {
                "input_tokens": chat.prompt_tokens,
                "output_tokens": chat.completion_tokens,
                "total_tokens": chat.prompt_tokens + chat.completion_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
            if done
            else None,
        }

    def events(self, chat: ChatReply, body: dict[str, Any]) -> Iterator[str]:
        seq = iter(range(1 << 30))

        def ev(kind: str, **data: Any) -> str:
            return sse({"type": kind, "sequence_number": next(seq), **data}, event=kind)

        yield ev("response.created", response=self.reply(chat, body, status="in_progress"))
        yield ev("response.in_progress", response=self.reply(chat, body, status="in_progress"))
        for n, item in enumerate(self._items(chat, body)):
            if item["type"] == "message":
                yield ev(
                    "response.output_item.added",
                    output_index=n,
                    item={**item, "status": "in_progress", "content": []},
                )
                empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                yield ev(
                    "response.content_part.added",
                    output_index=n,
                    item_id=item["id"],
                    content_index=0,
                    part=empty,
                )
                for piece in pieces(chat.text):
                    yield ev(
                        "response.output_text.delta",
                        output_index=n,
                        item_id=item["id"],
                        content_index=0,
                        delta=piece,
                        logprobs=[],
                    )
                yield ev(
                    "response.output_text.done",
                    output_index=n,
                    item_id=item["id"],
                    content_index=0,
                    text=chat.text,
                    logprobs=[],
                )
                part = item["content"][0]
                yield ev(
                    "response.content_part.done",
                    output_index=n,
                    item_id=item["id"],
                    content_index=0,
                    part=part,
                )
            else:  # a tool call: custom (free-form input) or function (JSON arguments)
                custom = item["type"] == "custom_tool_call"
                field = "input" if custom else "arguments"
                kind = "custom_tool_call_input" if custom else "function_call_arguments"
                yield ev(
                    "response.output_item.added",
                    output_index=n,
                    item={**item, field: "", "status": "in_progress"},
                )
                for piece in pieces(item[field]):
                    yield ev(f"response.{kind}.delta", output_index=n, item_id=item["id"], delta=piece)
                named = {} if custom else {"name": item["name"]}
                done = {field: item[field], **named}
                yield ev(f"response.{kind}.done", output_index=n, item_id=item["id"], **done)
            yield ev("response.output_item.done", output_index=n, item=item)
        yield ev("response.completed", response=self.reply(chat, body))

    def streamer(self, body: dict[str, Any]) -> ResponsesWriter:
        return ResponsesWriter(self, body)

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = "server_error" if status >= 500 else "invalid_request_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
