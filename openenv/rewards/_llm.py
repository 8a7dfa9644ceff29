"""Chat model clients for ``LLMJudge``: any OpenAI-compatible server (the official
``openai`` SDK) or Anthropic's Messages API (the official ``anthropic`` SDK).

A client is anything with ``async complete(prompt, **kwargs) -> str`` (upstream
OpenEnv's ``LLMClient`` interface); ``cache_key()`` names what makes two replies
comparable (model, endpoint, sampling) for the judge's cache. The SDK clients are made
per event loop (an SDK client's connections belong to the loop that opened them) and
never retry on their own: the judge retries transient errors itself.
"""

from __future__ import annotations

import json
import os
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._extras import require

__all__ = [
    "AnthropicChat",
    "LLMClient",
    "LLMResponse",
    "OpenAIChat",
    "ToolCall",
    "chat_client",
    "error_kind",
    "hosted_client",
    "join_endpoint",
]


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


def join_endpoint(endpoint: str, port: int | None, api_prefix: str = "") -> str:
    """``endpoint`` with ``port`` added when the URL names none (a different port is a
    ValueError) and ``api_prefix`` when it has no path, trailing slash dropped: upstream's
    rule for ``OpenAIClient("http://localhost", 8000, ...)``. Only http(s) with a host."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"endpoint {parts._replace(netloc=parts.hostname or '')!r} is not an http(s) URL")
    if parts.username is not None or parts.query or parts.fragment:
        raise ValueError("an endpoint URL takes no credentials, query or fragment (pass api_key)")
    if port is not None and parts.port is None:
        parts = parts._replace(netloc=f"{parts.netloc}:{port}")
    elif port is not None and port != parts.port:
        raise ValueError(f"the endpoint URL names port {parts.port}, which conflicts with port={port}")
    if api_prefix and parts.path in ("", "/"):
        parts = parts._replace(path=api_prefix)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/")))


class LLMClient(ABC):
    """A model endpoint: implement ``complete`` (and ``complete_with_tools`` if it can)."""

    def __init__(self, endpoint: str = "", port: int | None = None) -> None:
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
        return join_endpoint(self.endpoint, self.port)

    def cache_key(self) -> str:
        """What makes two replies to one prompt comparable (the judge's cache key)."""
        return f"{type(self).__module__}.{type(self).__qualname__}"


class _SDKChat(LLMClient):
    """What the two SDK clients share: settings, the key, one SDK client per loop."""

    provider = ""
    default_key_env = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        system_prompt: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int = 256,
        timeout_s: float = 60.0,
    ) -> None:
        super().__init__(base_url or "", None)
        self.model, self.system_prompt = model, system_prompt
        self.temperature, self.max_tokens, self.timeout_s = temperature, max_tokens, timeout_s
        env = api_key_env or self.default_key_env
        if api_key is None:
            api_key = os.environ.get(env) or ("none" if base_url else None)
        self.api_key = api_key
        if self.api_key is None:
            raise ValueError(f"the {self.provider} judge reads its key from ${env}, which is not set")
        self._sdk: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def _client(self) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()
        client = self._sdk.get(loop)
        if client is None:
            client = self._sdk[loop] = self._make_sdk()
        return client

    def _make_sdk(self) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close this event loop's SDK client (its connections)."""
        import asyncio

        client = self._sdk.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    def cache_key(self) -> str:
        return json.dumps(
            [self.provider, self.model, self.endpoint, self.system_prompt, self.temperature, self.max_tokens]
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> _SDKChat:
        return self  # one client (and its connections) for every clone of a rubric

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_sdk"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._sdk = weakref.WeakKeyDictionary()


class OpenAIChat(_SDKChat):
    """``OpenAIChat("gpt-4o-mini")``, or any OpenAI-compatible server with ``base_url``
    (``.../v1``); the key from ``api_key`` or ``$OPENAI_API_KEY`` (``api_key_env``).
    ``max_completion_tokens=True`` for models that refuse ``max_tokens`` (o1, gpt-5)."""

    provider = "openai"
    default_key_env = "OPENAI_API_KEY"

    def __init__(self, model: str, *, max_completion_tokens: bool = False, **options: Any) -> None:
        require("openai", extra="eval", feature="an OpenAI judge")
        super().__init__(model, **options)
        self.max_completion_tokens = max_completion_tokens

    def _make_sdk(self) -> Any:
        import openai

        return openai.AsyncOpenAI(
            base_url=self.endpoint or None, api_key=self.api_key, max_retries=0, timeout=self.timeout_s
        )

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        messages = [{"role": "user", "content": prompt}]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        tokens = kwargs.get("max_tokens", self.max_tokens)
        body["max_completion_tokens" if self.max_completion_tokens else "max_tokens"] = tokens
        temperature = kwargs.get("temperature", self.temperature)
        if temperature is not None and not self.max_completion_tokens:
            body["temperature"] = temperature
        response = await self._client().chat.completions.create(**body)
        return response.choices[0].message.content or ""


class AnthropicChat(_SDKChat):
    """``AnthropicChat("claude-sonnet-4-5")``; ``base_url`` for another Messages-API
    server; the key from ``api_key`` or ``$ANTHROPIC_API_KEY`` (``api_key_env``)."""

    provider = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, **options: Any) -> None:
        require("anthropic", extra="eval", feature="an Anthropic judge")
        super().__init__(model, **options)

    def _make_sdk(self) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(
            base_url=self.endpoint or None, api_key=self.api_key, max_retries=0, timeout=self.timeout_s
        )

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": kwargs.get("max_tokens", self.max_tokens),
        }
        temperature = kwargs.get("temperature", self.temperature)
        if temperature is not None:  # newer SDKs take no `temperature` keyword: in the body
            body["extra_body"] = {"temperature": temperature}
        if self.system_prompt:
            body["system"] = self.system_prompt
        response = await self._client().messages.create(**body)
        return "".join(block.text for block in response.content if block.type == "text")


def chat_client(spec: str, **options: Any) -> LLMClient:
    """``openai:MODEL`` or ``anthropic:MODEL`` as a client; ``options`` go to its constructor."""
    provider, _, model = spec.partition(":")
    classes: dict[str, type[_SDKChat]] = {"openai": OpenAIChat, "anthropic": AnthropicChat}
    if provider not in classes or not model:
        raise ValueError(f"judge model {spec!r} is not openai:MODEL or anthropic:MODEL")
    return classes[provider](model, **options)


#: Hosted providers (upstream's ``create_llm_client``): endpoint, and the OpenAI models
#: that take ``max_completion_tokens`` instead of ``max_tokens``.
HOSTED = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_COMPLETION_TOKENS = ("gpt-5-mini", "o1", "o3", "o4-mini")


def hosted_client(provider: str, model: str, api_key: str, **options: Any) -> LLMClient:
    """A client of a hosted provider (``openai`` or ``anthropic``, any case)."""
    key = provider.lower()
    if key not in HOSTED:
        raise ValueError(f"Unsupported provider: {provider!r}. Supported: {sorted(HOSTED)}")
    if key == "openai" and model.startswith(_COMPLETION_TOKENS):
        options["max_completion_tokens"] = True
    return chat_client(f"{key}:{model}", base_url=HOSTED[key], api_key=api_key, **options)


def error_kind(exc: BaseException) -> str:
    """``"auth"`` (401/403), ``"transient"`` (no connection, a timeout, 408/409/429, 5xx)
    or ``"fatal"``, for an exception of either SDK (or of a client built on httpx)."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    if status in (401, 403):
        return "auth"
    if isinstance(status, int):
        return "transient" if status in (408, 409, 429) or status >= 500 else "fatal"
    names = {cls.__name__ for cls in type(exc).__mro__}
    transient = {"APIConnectionError", "APITimeoutError", "TimeoutError", "ConnectionError", "TransportError"}
    return "transient" if names & transient else "fatal"
