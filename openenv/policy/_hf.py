"""A local checkpoint as a policy: batched sampling in this process, token in/token out.

Each episode's context is only ever extended, as the trainer does (RFC 0002): the
opening prompt, then each reply's sampled ids and the next observation's ids, so the
trajectory's token ids are exactly what was sampled. Text envs get the reply text;
other envs get tool calls parsed from ``<tool_call>{...}</tool_call>`` (a reply
without a valid one is a parse failure: see ``_parse``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import Agent, Decision, Episode, Policy
from ._chat import parse_tool_calls
from ._local import LocalModel
from ._parse import decide, rejected
from ._space import observation_text


class LocalPolicy(Policy):
    """``LocalPolicy("runs/arith")``: a checkpoint (see ``LocalModel``) sampled here."""

    def __init__(
        self,
        checkpoint: str,
        *,
        temperature: float = 1.0,
        max_tokens: int = 64,
        seed: int = 0,
        device: str = "cpu",
        max_batch: int = 64,
    ) -> None:
        self.model = LocalModel(checkpoint, seed=seed, device=device, max_batch=max_batch)
        self.name = f"local:{checkpoint}"
        self.temperature, self.max_tokens = temperature, max_tokens

    def agent(self, episode: Episode) -> Agent:
        return _LocalAgent(self, episode)


class _LocalAgent(Agent):
    def __init__(self, policy: LocalPolicy, episode: Episode) -> None:
        self.policy, self.episode = policy, episode
        self.context: list[int] = []
        self.note: str | None = None  # why the last turn did nothing, for the next message

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        model = self.policy.model
        text = observation_text(observation)
        if self.note:  # the last turn did nothing: say why before the observation
            text, self.note = f"{self.note}\n\n{text}", None
        shown = model.renderer.next(text) if self.context else model.renderer.first(text)
        prompt_tokens = len(self.context) + len(shown)
        self.context += shown
        ids, logps = await model.generate(
            self.context, max_new_tokens=self.policy.max_tokens, temperature=self.policy.temperature
        )
        self.context += ids
        reply = model.decode(ids)
        actions = self.episode.actions
        tools = actions.text_field is None
        calls = parse_tool_calls(reply) if tools else []
        action, parse_error = decide(actions, calls, reply, tools=tools)
        return Decision(
            action,
            messages=[{"role": "user", "content": text}, {"role": "assistant", "content": reply}],
            tool_calls=calls,
            token_ids=list(ids),
            logprobs=list(logps),
            prompt_tokens=prompt_tokens,
            completion_tokens=len(ids),
            parse_error=parse_error,
        )

    def rejected(self, reason: str) -> None:
        self.note = rejected(reason)
