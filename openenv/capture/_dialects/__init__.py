"""The four agent-facing dialects, by ``APIType``."""

from __future__ import annotations

from .._detection import APIType
from ._anthropic import AnthropicMessages
from ._base import ChatReply, Dialect
from ._chat import OpenAIChat
from ._google import GoogleGenerateContent
from ._responses import OpenAIResponses

DIALECTS: dict[APIType, Dialect] = {
    APIType.OPENAI_CHAT: OpenAIChat(),
    APIType.OPENAI_RESPONSES: OpenAIResponses(),
    APIType.ANTHROPIC: AnthropicMessages(),
    APIType.GOOGLE: GoogleGenerateContent(),
}

__all__ = ["DIALECTS", "ChatReply", "Dialect"]
