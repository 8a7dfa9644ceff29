"""An OpenAI-compatible chat endpoint as a policy, through the official ``openai`` SDK.

Text envs (RFC 0002) get the reply's text as the action; other envs get the env's
actions as tools and the first tool call as the action (a reply without a valid call
is a parse failure: see ``_parse``). The observation after a tool
call goes back as that call's ``tool`` message. With ``token_ids=True`` the request
asks for sampled token ids (``return_token_ids``, as vLLM and ``openenv policy serve``
answer) and with ``logprobs=True`` for their logprobs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from .._exceptions import PolicyError
from .._extras import require
from ._base import Agent, Decision, Episode, Policy
from ._chat import parse_tool_calls, system_prompt
from ._parse import decide, rejected
from ._space import observation_text


class OpenAIPolicy(Policy):
    """``OpenAIPolicy("gpt-4o-mini")``; ``base_url`` for any OpenAI-compatible server;
    the key is read from the variable ``api_key_env`` (default ``OPENAI_API_KEY``).
    ``tools``: offer the env's actions as tools on a text env too; ``system``: the system
    prompt (default: one that describes the env's actions)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        temperature: float = 1.0,
        max_tokens: int = 1024,
        logprobs: bool = False,
        token_ids: bool = False,
        tools: bool = False,
        timeout_s: float = 120.0,
        system: str | None = None,
    ) -> None:
        openai = require("openai", extra="eval", feature="the openai policy")
        self.system = system  # the system prompt (default: one that describes the env's actions)
        self.name = f"openai:{model}"
        self.model, self.base_url = model, base_url
        self.temperature, self.max_tokens = temperature, max_tokens
        self.logprobs, self.token_ids = logprobs, token_ids
        self.use_tools = tools  # offer tools on a text env too (else its text field is the action)
        key = os.environ.get(api_key_env) or ("none" if base_url else None)
        if key is None:
            raise PolicyError(f"the openai policy reads its key from ${api_key_env}, which is not set")
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout_s)

    async def check(self) -> None:
        """Fail fast, before any episode: the server answers and takes the key."""
        import openai

        where = self.base_url or "api.openai.com"
        try:
            await self.client.models.list()
        except openai.AuthenticationError as exc:
            raise PolicyError(f"the model server at {where} refused the key (401): {_short(exc)}") from None
        except openai.APIConnectionError as exc:
            raise PolicyError(f"cannot reach the model server at {where}: {_short(exc)}") from None
        except openai.NotFoundError:
            pass  # no /models route: the first episode will tell

    def agent(self, episode: Episode) -> Agent:
        return _OpenAIAgent(self, episode)

    async def aclose(self) -> None:
        await self.client.close()

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = tools
        if self.logprobs:
            extra["logprobs"] = True
        if self.token_ids:
            extra["extra_body"] = {"return_token_ids": True}
        import openai

        try:
            return await self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                **extra,
            )
        except (openai.BadRequestError, openai.NotFoundError, openai.UnprocessableEntityError) as exc:
            # the server's own words (a model it does not serve, a field it refuses): the
            # SDK's message alone is "Error code: 400"
            where = self.base_url or "api.openai.com"
            raise PolicyError(
                f"the model server at {where} answered {exc.status_code}: {_short(_body(exc))}"
            ) from None


class _OpenAIAgent(Agent):
    def __init__(self, policy: OpenAIPolicy, episode: Episode) -> None:
        self.policy, self.episode = policy, episode
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(episode.actions)}]
        self.pending_call: str | None = None  # the tool call the next observation answers
        self.note: str | None = None  # why the last turn did nothing, for the next message
        text_env = episode.actions.text_field is not None and not policy.use_tools
        self.tools = None if text_env else [t.openai() for t in episode.actions.tools]
        if not text_env:
            self.messages[0]["content"] = system_prompt(episode.actions, tools=True)
        if policy.system is not None:
            self.messages[0]["content"] = policy.system

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        text = observation_text(observation)
        if self.note:  # the last turn did nothing: say why before the observation
            text, self.note = f"{self.note}\n\n{text}", None
        shown: dict[str, Any] = (
            {"role": "tool", "tool_call_id": self.pending_call, "content": text}
            if self.pending_call
            else {"role": "user", "content": text}
        )
        self.messages.append(shown)
        reply = await self.policy.complete(self.messages, self.tools)
        choice = reply.choices[0]
        message = choice.message
        content = message.content or ""
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in (message.tool_calls or [])
        ]
        if not calls and self.tools:
            calls = [{"id": f"call_{i}", **c} for i, c in enumerate(parse_tool_calls(content))]
        assistant: dict[str, Any] = {"role": "assistant", "content": content}
        action, parse_error = decide(self.episode.actions, calls, content, tools=self.tools is not None)
        if calls:
            call = calls[0]  # one action per step: the first call is played
            assistant["tool_calls"] = [_wire_call(call)]
            self.pending_call = call["id"]
        else:
            self.pending_call = None
        self.messages.append(assistant)
        usage = reply.usage
        return Decision(
            action,
            messages=[shown, assistant],
            tool_calls=[{"name": c["name"], "arguments": _args(c["arguments"])} for c in calls],
            token_ids=_token_ids(choice),
            logprobs=_logprobs(choice),
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            parse_error=parse_error,
        )

    def rejected(self, reason: str) -> None:
        self.note = rejected(reason)


def _wire_call(call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = call["arguments"]
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": text}}


def _args(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _token_ids(choice: Any) -> list[int] | None:
    extra = getattr(choice, "model_extra", None) or {}
    ids = extra.get("token_ids")
    return [int(i) for i in ids] if isinstance(ids, list) else None


def _logprobs(choice: Any) -> list[float] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    return [float(t.logprob) for t in content] if content else None


def _body(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        found = inner.get("message") or inner.get("detail") if isinstance(inner, Mapping) else inner
        return str(found or body)
    return str(body or exc)


def _short(exc: object) -> str:
    return " ".join(str(exc).split())[:200]
