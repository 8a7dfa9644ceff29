"""Baselines and plain-Python policies: ``null``, ``random`` and a callable."""

from __future__ import annotations

import inspect
import random
import string
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._base import Agent, Decision, Episode, Policy
from ._space import ActionSpace, Tool

#: ``fn(observation, episode)`` -> an action dict, or None to stop; sync or async.
ActFn = Callable[[Mapping[str, Any], Episode], "dict[str, Any] | Awaitable[dict[str, Any] | None] | None"]


class NullPolicy(Policy):
    """Does nothing: the empty text on a text env (each turn until the limit), else it
    stops at once. The floor every other policy should beat."""

    name = "null"

    def agent(self, episode: Episode) -> Agent:
        return _NullAgent(episode.actions)


class _NullAgent(Agent):
    def __init__(self, actions: ActionSpace) -> None:
        self.actions = actions

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        if self.actions.text_field is None:
            return Decision(None)
        return Decision(self.actions.action_from_text(""))


class RandomPolicy(Policy):
    """A random action each turn, drawn from the schema (seeded by the episode's seed):
    a random text on a text env, else a random tool with random arguments."""

    name = "random"

    def __init__(self, max_chars: int = 16) -> None:
        self.max_chars = max_chars

    def agent(self, episode: Episode) -> Agent:
        return _RandomAgent(episode.actions, random.Random(episode.seed), self.max_chars)


class _RandomAgent(Agent):
    def __init__(self, actions: ActionSpace, rng: random.Random, max_chars: int) -> None:
        self.actions, self.rng, self.max_chars = actions, rng, max_chars

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        if self.actions.text_field is not None:
            return Decision(self.actions.action_from_text(self._text()))
        if not self.actions.tools:
            return Decision(None)
        tool: Tool = self.rng.choice(self.actions.tools)
        args = {k: self._value(v) for k, v in tool.parameters.get("properties", {}).items()}
        call = {"name": tool.name, "arguments": args}
        return Decision(self.actions.action_from_call(tool.name, args), tool_calls=[call])

    def _text(self) -> str:
        n = self.rng.randint(0, self.max_chars)
        return "".join(self.rng.choice(string.ascii_letters + string.digits + " ") for _ in range(n))

    def _value(self, prop: Mapping[str, Any]) -> Any:
        if "enum" in prop:
            return self.rng.choice(prop["enum"])
        if "const" in prop:
            return prop["const"]
        if "default" in prop and self.rng.random() < 0.5:
            return prop["default"]
        kind = prop.get("type")
        if kind is None and isinstance(prop.get("anyOf"), list):
            options = [p for p in prop["anyOf"] if isinstance(p, Mapping) and p.get("type") != "null"]
            return self._value(options[0]) if options else None
        if kind == "integer":
            return self.rng.randint(int(prop.get("minimum", 0)), int(prop.get("maximum", 10)))
        if kind == "number":
            return self.rng.uniform(float(prop.get("minimum", 0.0)), float(prop.get("maximum", 1.0)))
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "array":
            return []
        if kind == "object":
            return {}
        return self._text()


class CallablePolicy(Policy):
    """A Python function as a policy: ``fn(observation, episode)`` returns the action
    (a dict), or None to stop; it may be ``async``."""

    def __init__(self, fn: ActFn, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or str(getattr(fn, "__name__", "callable"))

    def agent(self, episode: Episode) -> Agent:
        return _CallableAgent(self.fn, episode)


class _CallableAgent(Agent):
    def __init__(self, fn: ActFn, episode: Episode) -> None:
        self.fn, self.episode = fn, episode

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        action = self.fn(observation, self.episode)
        if inspect.isawaitable(action):
            action = await action
        return Decision(None if action is None else dict(action))
