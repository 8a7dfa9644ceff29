"""The policy interface: a ``Policy`` makes one ``Agent`` per episode; the agent sees
each observation and answers with a ``Decision`` (an action, or None to stop).

A policy is any object with ``agent(episode) -> Agent`` and ``aclose()``; the agent has
``async act(observation, reward) -> Decision``. LLM policies keep the conversation in
the agent and report the messages of each turn, tool calls, token ids and logprobs.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._space import ActionSpace


@dataclass(frozen=True)
class Episode:
    """What a policy knows of the episode it plays."""

    env: str
    task_id: str
    task: Mapping[str, Any]
    seed: int
    sample: int
    actions: ActionSpace
    max_turns: int


@dataclass
class Decision:
    """A policy's answer to one observation.

    ``action`` None ends the episode (the policy stops), unless ``parse_error`` is set:
    then the model's reply did not parse (``{"reason", "reply"}``, see ``_parse``) and
    the turn is a no-op. ``messages``: what this turn added to the conversation (the
    user message it was shown, the assistant reply). ``warnings``: what the policy had
    to change to answer at all (a prompt cut to the model's context), one line each.
    """

    action: dict[str, Any] | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    parse_error: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


class Agent(abc.ABC):
    """One episode's player."""

    @abc.abstractmethod
    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        """The decision for ``observation`` (``reward``: the last step's, None at reset)."""

    def rejected(self, reason: str) -> None:  # noqa: B027  (optional hook)
        """The last decision did nothing (its reply did not parse, or the env refused
        its action as invalid): ``reason`` says why. A chat agent tells the model."""


class Policy(abc.ABC):
    """Makes an ``Agent`` per episode. ``name`` goes into every trajectory."""

    name: str = "policy"

    @abc.abstractmethod
    def agent(self, episode: Episode) -> Agent:
        """A fresh agent for ``episode``."""

    async def check(self) -> None:  # noqa: B027  (optional hook)
        """Fail fast before a run (an endpoint that cannot be reached, a refused key)."""

    async def aclose(self) -> None:  # noqa: B027  (optional hook)
        """Release clients, models and servers; called once when a run ends."""
