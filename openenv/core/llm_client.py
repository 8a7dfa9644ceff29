"""Upstream's LLM client names over ``openenv.rewards``' chat clients (no tool calling)."""

from __future__ import annotations

from ..rewards import AnthropicChat, LLMClient, OpenAIChat
from ..rewards._llm import LLMResponse, ToolCall, hosted_client, join_endpoint

__all__ = ["AnthropicClient", "LLMClient", "LLMResponse", "OpenAIClient", "ToolCall", "create_llm_client"]


class OpenAIClient(OpenAIChat):
    """Upstream's ``OpenAIClient(endpoint, port, model, ...)``: ``/v1`` added to a URL without a path."""

    def __init__(self, endpoint: str, port: int | None, model: str, api_key: str | None = None,
                 system_prompt: str | None = None, temperature: float = 0.0, max_tokens: int = 256,
                 use_max_completion_tokens: bool = False) -> None:  # fmt: skip
        super().__init__(model, base_url=join_endpoint(endpoint, port, "/v1"), system_prompt=system_prompt,
                         api_key="not-needed" if api_key is None else api_key, temperature=temperature,
                         max_tokens=max_tokens, max_completion_tokens=use_max_completion_tokens)  # fmt: skip


class AnthropicClient(AnthropicChat):
    """Upstream's ``AnthropicClient(endpoint, port, model, ...)``."""

    def __init__(self, endpoint: str, port: int | None, model: str, api_key: str | None = None,
                 system_prompt: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 256) -> None:  # fmt: skip
        super().__init__(model, base_url=join_endpoint(endpoint, port), system_prompt=system_prompt,
                         api_key="not-needed" if api_key is None else api_key, temperature=temperature,
                         max_tokens=max_tokens)  # fmt: skip


def create_llm_client(provider: str, model: str, api_key: str, *, system_prompt: str | None = None,
                      temperature: float = 0.0, max_tokens: int = 4096) -> LLMClient:  # fmt: skip
    """A hosted provider's client (``"openai"`` or ``"anthropic"``)."""
    return hosted_client(provider, model, api_key, system_prompt=system_prompt, temperature=temperature,
                         max_tokens=max_tokens)  # fmt: skip
