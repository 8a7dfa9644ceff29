"""What every dialect shares: the backend's reply read once, and server-sent event framing."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as chat completions carries it

    def args(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass
class ChatReply:
    """The first choice of a backend chat completion, read into plain fields."""

    raw: dict[str, Any]
    text: str
    tool_calls: list[ToolCall]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    id: str
    created: int

    @classmethod
    def read(cls, raw: dict[str, Any]) -> ChatReply:
        choice = raw["choices"][0]
        message = choice.get("message") or {}
        calls = [
            ToolCall(
                c.get("id") or f"call_{uuid.uuid4().hex[:16]}",
                (c.get("function") or {}).get("name", ""),
                (c.get("function") or {}).get("arguments") or "{}",
            )
            for c in message.get("tool_calls") or []
        ]
        usage = raw.get("usage") or {}
        return cls(
            raw=raw,
            text=message.get("content") or "",
            tool_calls=calls,
            finish_reason=choice.get("finish_reason") or "stop",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            model=raw.get("model") or "",
            id=raw.get("id") or uuid.uuid4().hex,
            created=int(raw.get("created") or time.time()),
        )

    def message(self) -> dict[str, Any]:
        """The reply as a chat message (what the next call's history will carry)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return out


class Dialect(Protocol):
    """One agent-facing API: its requests read into chat completions, replies written back."""

    name: str

    def to_chat(self, body: dict[str, Any], path: str) -> dict[str, Any]: ...

    def wants_stream(self, body: dict[str, Any], path: str, query: Mapping[str, str]) -> bool: ...

    def reply(self, chat: ChatReply, body: dict[str, Any]) -> dict[str, Any]: ...

    def events(self, chat: ChatReply, body: dict[str, Any]) -> Iterator[str]: ...

    def streamer(self, body: dict[str, Any]) -> Any: ...  # a _writers.StreamWriter

    def error(self, status: int, message: str) -> dict[str, Any]: ...


def sse(data: dict[str, Any] | str, event: str | None = None) -> str:
    """One server-sent event."""
    payload = data if isinstance(data, str) else orjson.dumps(data).decode()
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def pieces(text: str, size: int = 16) -> list[str]:
    """``text`` cut into deltas, as a streaming server sends it."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def need(cond: bool, message: str) -> None:
    from .._errors import BadRequest

    if not cond:
        raise BadRequest(message)
