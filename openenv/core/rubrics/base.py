"""Upstream's ``Rubric`` over ours (``openenv.rewards.Rubric``).

The scoring, children, breakdown and the sync/async drivers are ours; this class adds
upstream's surface: ``forward`` is abstract, forward hooks and pre-hooks, ``children``
/ ``rubrics``, ``state_dict`` / ``load_state_dict``, dotted ``named_rubrics`` prefixes,
and ``__call__`` that returns an awaitable when the rubric (or any rubric under it)
has an ``async def forward`` and a float otherwise.
"""

from __future__ import annotations

import inspect
from abc import ABCMeta, abstractmethod
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from ...rewards import Rubric as _Rubric

__all__ = ["Rubric"]

PreHook = Callable[["Rubric", Any, Any], Any]
Hook = Callable[["Rubric", Any, Any, float], Any]


class Rubric(_Rubric, metaclass=ABCMeta):
    """Subclass and implement ``forward(action, observation) -> float`` (or ``async def``)."""

    def __init__(self) -> None:
        super().__init__()
        self._forward_hooks: list[Hook] = []
        self._forward_pre_hooks: list[PreHook] = []

    @abstractmethod
    def forward(self, action: Any, observation: Any) -> float:
        """Score one step."""

    # --- calling ---------------------------------------------------------------------

    def __call__(self, action: Any, observation: Any) -> Any:  # float, or an awaitable of one
        if self._has_async():
            return self.acall(action, observation)
        return super().__call__(action, observation)

    def _has_async(self) -> bool:
        return self._async_forward() or any(r._async_forward() for _, r in self.named_rubrics())

    def _hooks(self) -> tuple[list[PreHook], list[Hook]]:
        # Instances built without __init__ (or by a subclass that skipped it) have none.
        return getattr(self, "_forward_pre_hooks", []), getattr(self, "_forward_hooks", [])

    def _score_sync(self, action: Any, observation: Any) -> float:
        pre, post = self._hooks()
        for hook in pre:
            hook(self, action, observation)
        score = super()._score_sync(action, observation)
        for after in post:
            after(self, action, observation, score)
        return score

    async def _score_async(self, action: Any, observation: Any) -> float:
        pre, post = self._hooks()
        for hook in pre:
            await _maybe_await(hook(self, action, observation))
        score = await super()._score_async(action, observation)
        for after in post:
            await _maybe_await(after(self, action, observation, score))
        return score

    def register_forward_hook(self, hook: Hook) -> None:
        """``hook(rubric, action, observation, score)`` after every scoring."""
        self._forward_hooks.append(hook)

    def register_forward_pre_hook(self, hook: PreHook) -> None:
        """``hook(rubric, action, observation)`` before every scoring."""
        self._forward_pre_hooks.append(hook)

    # --- the tree --------------------------------------------------------------------

    def children(self) -> Iterator[_Rubric]:
        for _, child in self.named_children():
            yield child

    def rubrics(self) -> Iterator[_Rubric]:
        for _, rubric in self.named_rubrics():
            yield rubric

    def named_rubrics(self, prefix: str = "") -> Iterator[tuple[str, _Rubric]]:
        """Descendants as ``(dotted.path, rubric)``; ``prefix`` with or without its dot."""
        yield from super().named_rubrics(prefix if not prefix or prefix.endswith(".") else prefix + ".")

    def get_rubric(self, path: str) -> _Rubric:
        try:
            return super().get_rubric(path)
        except KeyError:
            raise KeyError(f"Rubric path not found: {path}") from None

    # --- checkpoints -----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Configuration to checkpoint (none by default)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned (nothing by default)."""
        return None


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def plan_forward(rubric: _Rubric, action: Any, observation: Any) -> float:
    """A container's ``forward``: its plan, each child called (hooks and all)."""
    plan = rubric.plan(action, observation)
    try:
        child = next(plan)
        while True:
            child = plan.send(child(action, observation))
    except StopIteration as stop:
        return float(stop.value)


AwaitableScore = Awaitable[float]
