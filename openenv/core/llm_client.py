"""The LLM data types upstream env code imports: ``ToolCall``, ``LLMResponse``, ``LLMClient``.

Only the types and the abstract client; the network clients (``OpenAIClient``,
``AnthropicClient``, ``create_llm_client``) are not provided: bring your own
``LLMClient`` subclass.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["LLMClient", "LLMResponse", "ToolCall"]


@dataclass
class ToolCall:
    """One tool call the model asked for."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass
class LLMResponse:
    """A model's reply: its text and any tool calls."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)

    def to_message_dict(self) -> dict[str, Any]:
        """The reply as an OpenAI-style assistant message."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args)},
                }
                for c in self.tool_calls
            ]
        return message


class LLMClient(ABC):
    """A model endpoint: implement ``complete`` (and ``complete_with_tools`` if it can)."""

    def __init__(self, endpoint: str, port: int | None) -> None:
        self.endpoint = endpoint
        self.port = port

    @abstractmethod
    async def complete(self, prompt: str, **kwargs: Any) -> str:
        """The model's text reply to ``prompt``."""

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        """A reply to OpenAI-style ``messages`` given MCP ``tools``."""
        raise NotImplementedError(f"{type(self).__name__} does not support tool calling")

    @property
    def base_url(self) -> str:
        """``endpoint`` with ``port`` added when the URL names none."""
        parts = urlsplit(self.endpoint)
        if self.port is None or parts.port is not None:
            return self.endpoint
        return urlunsplit(parts._replace(netloc=f"{parts.netloc}:{self.port}"))
