"""Anthropic's Messages API as a policy, through the official ``anthropic`` SDK.

As the OpenAI policy: text envs get the reply's text, other envs the env's actions as
tools (``tool_use`` blocks); the observation after a tool call goes back as its
``tool_result``. The key is read from ``api_key_env`` (default ``ANTHROPIC_API_KEY``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .._exceptions import PolicyError
from .._extras import require
from ._base import Agent, Decision, Episode, Policy
from ._chat import system_prompt
from ._parse import decide, rejected
from ._space import observation_text


class AnthropicPolicy(Policy):
    """``AnthropicPolicy("claude-sonnet-4-5")``; ``base_url`` for a compatible server;
    ``temperature`` None leaves the model's default."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        temperature: float | None = None,
        max_tokens: int = 1024,
        timeout_s: float = 120.0,
        system: str | None = None,
    ) -> None:
        anthropic = require("anthropic", extra="eval", feature="the anthropic policy")
        self.system = system  # the system prompt (default: one that describes the env's actions)
        self.name = f"anthropic:{model}"
        self.model, self.base_url = model, base_url
        self.temperature, self.max_tokens = temperature, max_tokens
        key = os.environ.get(api_key_env)
        if key is None:
            raise PolicyError(f"the anthropic policy reads its key from ${api_key_env}, which is not set")
        self.client = anthropic.AsyncAnthropic(
            base_url=base_url, api_key=key, max_retries=0, timeout=timeout_s
        )

    async def check(self) -> None:
        """Fail fast: the server answers and takes the key."""
        import anthropic

        where = self.base_url or "api.anthropic.com"
        try:
            await self.client.models.list(limit=1)
        except anthropic.AuthenticationError as exc:
            raise PolicyError(f"the model server at {where} refused the key (401): {exc}") from None
        except anthropic.APIConnectionError as exc:
            raise PolicyError(f"cannot reach the model server at {where}: {exc}") from None
        except anthropic.NotFoundError:
            pass

    def agent(self, episode: Episode) -> Agent:
        return _AnthropicAgent(self, episode)

    async def aclose(self) -> None:
        await self.client.close()


class _AnthropicAgent(Agent):
    def __init__(self, policy: AnthropicPolicy, episode: Episode) -> None:
        self.policy, self.episode = policy, episode
        self.system = system_prompt(episode.actions) if policy.system is None else policy.system
        self.messages: list[dict[str, Any]] = []
        self.pending_call: str | None = None
        self.note: str | None = None  # why the last turn did nothing, for the next message
        text_env = episode.actions.text_field is not None
        self.tools = [] if text_env else [t.anthropic() for t in episode.actions.tools]

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        text = observation_text(observation)
        if self.note:  # the last turn did nothing: say why before the observation
            text, self.note = f"{self.note}\n\n{text}", None
        content: Any = (
            [{"type": "tool_result", "tool_use_id": self.pending_call, "content": text}]
            if self.pending_call
            else text
        )
        shown = {"role": "user", "content": content}
        self.messages.append(shown)
        extra: dict[str, Any] = {"tools": self.tools} if self.tools else {}
        if self.policy.temperature is not None:  # newer SDKs take no `temperature` keyword: in the body
            extra["extra_body"] = {"temperature": self.policy.temperature}
        reply = await self.policy.client.messages.create(
            model=self.policy.model,
            system=self.system,
            messages=self.messages,
            max_tokens=self.policy.max_tokens,
            **extra,
        )
        blocks = [block.model_dump() for block in reply.content]
        said = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = [b for b in blocks if b.get("type") == "tool_use"]
        self.pending_call = str(calls[0]["id"]) if calls else None
        action, parse_error = decide(
            self.episode.actions,
            [{"name": c["name"], "arguments": c.get("input") or {}} for c in calls],
            said,
            tools=bool(self.tools),
        )
        assistant = {"role": "assistant", "content": blocks}
        self.messages.append(assistant)
        return Decision(
            action,
            messages=[shown, assistant],
            tool_calls=[{"name": c["name"], "arguments": c.get("input") or {}} for c in calls],
            prompt_tokens=reply.usage.input_tokens,
            completion_tokens=reply.usage.output_tokens,
            parse_error=parse_error,
        )

    def rejected(self, reason: str) -> None:
        self.note = rejected(reason)
