"""Baselines and plain-Python policies: ``null``, ``random`` and a callable."""

from __future__ import annotations

import inspect
import math
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
    a random text on a text env, else a random tool with random arguments, each within
    its field's enum, bounds and lengths."""

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

    def _text(self, least: int = 0, most: int | None = None) -> str:
        most = max(least, self.max_chars if most is None else min(most, max(least, self.max_chars)))
        n = self.rng.randint(least, most)
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
            lo, hi = _bounds(prop, 1, 10)
            return self.rng.randint(math.ceil(lo), math.floor(hi))
        if kind == "number":
            lo, hi = _bounds(prop, 0, 1.0)
            return self.rng.uniform(lo, hi)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "array":
            return []
        if kind == "object":
            return {}
        return self._text(int(prop.get("minLength", 0)), prop.get("maxLength"))


def _bounds(prop: Mapping[str, Any], step: float, span: float) -> tuple[float, float]:
    """The range a random number is drawn from: the schema's bounds (an exclusive bound
    moved in by ``step``; 0 for a float, which ``uniform`` never quite reaches), else
    ``span`` past the one bound given, else 0 to ``span``."""
    lo = prop.get("minimum", prop.get("exclusiveMinimum"))
    hi = prop.get("maximum", prop.get("exclusiveMaximum"))
    if "minimum" not in prop and lo is not None:
        lo += step
    if "maximum" not in prop and hi is not None:
        hi -= step
    if lo is None:
        lo = 0 if hi is None or hi >= 0 else hi - span
    if hi is None:
        hi = lo + span
    return float(lo), float(max(lo, hi))


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
