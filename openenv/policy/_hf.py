"""A local checkpoint as a policy: batched sampling in this process, token in/token out.

Each episode's context is only ever extended, as the trainer does (RFC 0002): the
opening prompt, then each reply's sampled ids and the next observation's ids, so the
trajectory's token ids are exactly what was sampled. A context longer than the model
takes (with room for ``max_tokens``) is cut from the left for sampling, the model seeing
its last tokens, and the turn says so in its ``warnings``. Text envs get the reply text;
other envs are told their tools in the first prompt (by the chat template where it
shows tools, else as text) and get tool calls parsed from
``<tool_call>{...}</tool_call>`` (a reply without a valid one is a parse failure: see
``_parse``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import Agent, Decision, Episode, Policy
from ._chat import parse_tool_calls, system_prompt, tools_text
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
        if self.context:
            shown = model.renderer.next(text)
        else:
            text, shown = self.opening(text)
        self.context += shown
        window, max_new, warning = model.fit(self.context, self.policy.max_tokens)
        ids, logps = await model.generate(window, max_new_tokens=max_new, temperature=self.policy.temperature)
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
            prompt_tokens=len(window),
            completion_tokens=len(ids),
            parse_error=parse_error,
            warnings=[warning] if warning else [],
        )

    def opening(self, text: str) -> tuple[str, list[int]]:
        """The first user message and its ids. On a tool env the model is told the tools
        (and the system prompt the chat policies send): by its chat template where the
        template shows tools, else as text before the observation (``tools_text``)."""
        model, actions = self.policy.model, self.episode.actions
        if actions.text_field is not None or not actions.tools:
            return text, model.renderer.first(text)
        tools = [tool.openai() for tool in actions.tools]
        system = system_prompt(actions)
        if model.shows_tools(tools):
            messages = [{"role": "system", "content": system}, {"role": "user", "content": text}]
            return text, model.render(messages, tools)
        text = f"{system}\n{tools_text(tools)}\n\n{text}"
        return text, model.renderer.first(text)

    def rejected(self, reason: str) -> None:
        self.note = rejected(reason)
