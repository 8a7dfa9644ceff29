"""Rubrics made of rubrics: ``WeightedSum``, ``Gate``, ``Sequential``.

Each is a plan (see ``Rubric.plan``): it yields the child to score next and gets its
score back, so one definition serves sync and async scoring.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from ._rubric import Plan, Rubric, ScoreFn, as_rubric, named


class _Container(Rubric):
    def forward(self, action: Any, observation: Any) -> float:
        """The plan, its children scored in turn (what calling the container does)."""
        return float(self._compute_sync(action, observation))


class WeightedSum(_Container):
    """``sum(weight * child)`` over named children.

    >>> WeightedSum({"correct": correct, "format": fmt}, weights={"correct": 0.8, "format": 0.2})
    ... # doctest: +SKIP

    ``children`` is a mapping (names are its keys) or a sequence (names are the
    children's own); ``weights`` is a mapping by name or a sequence in child order;
    default 1.0 each. Weights need not sum to 1 unless ``normalized`` (upstream's rule).
    In async scoring the children are scored concurrently.
    """

    def __init__(
        self,
        children: Mapping[str, Rubric | ScoreFn] | Sequence[Rubric | ScoreFn],
        weights: Mapping[str, float] | Sequence[float] | None = None,
        *,
        name: str | None = None,
        normalized: bool = False,
    ) -> None:
        super().__init__(name)
        kids = named(children)
        for key, child in kids.items():
            self.add(key, child)
        if weights is None:
            self._weights = dict.fromkeys(kids, 1.0)
        elif isinstance(weights, Mapping):
            if set(weights) != set(kids):
                raise ValueError(f"weights name {sorted(weights)}, children are {sorted(kids)}")
            self._weights = {k: float(weights[k]) for k in kids}
        else:
            if len(weights) != len(kids):
                raise ValueError(f"{len(weights)} weights for {len(kids)} children")
            self._weights = {k: float(w) for k, w in zip(kids, weights, strict=True)}
        if normalized and abs(sum(self._weights.values()) - 1.0) > 1e-6:
            raise ValueError(f"Weights must sum to 1.0, got {sum(self._weights.values())}")

    @property
    def weights(self) -> dict[str, float]:
        """``{child name: weight}``."""
        return dict(self._weights)

    def plan(self, action: Any, observation: Any) -> Plan:
        total = 0.0
        for key, child in self.named_children():
            total += self._weights[key] * (yield child)
        return total

    async def _compute_async(self, action: Any, observation: Any) -> float:
        kids = list(self.named_children())
        scores = await asyncio.gather(*(child._score_async(action, observation) for _, child in kids))
        return sum(self._weights[key] * score for (key, _), score in zip(kids, scores, strict=True))


class Gate(_Container):
    """The child's score when it reaches ``threshold``, else 0.0."""

    def __init__(self, child: Rubric | ScoreFn, threshold: float = 1.0, *, name: str | None = None) -> None:
        super().__init__(name)
        self.threshold = threshold
        self.child = as_rubric(child)
        self._children = {self.child.name: self.child}

    def plan(self, action: Any, observation: Any) -> Plan:
        score = yield self.child
        return score if score >= self.threshold else 0.0


class Sequential(_Container):
    """Children in order; stops at the first that scores 0.0 (and returns 0.0), else
    returns the last child's score (1.0 with no children, as upstream: nothing failed).
    Skipped children are absent from the breakdown."""

    def __init__(
        self,
        *children: Rubric | ScoreFn,
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        for key, child in named(list(children)).items():
            self.add(key, child)

    def plan(self, action: Any, observation: Any) -> Plan:
        score = 1.0
        for _, child in self.named_children():
            score = yield child
            if score == 0.0:
                return 0.0
        return score

    def __len__(self) -> int:
        return len(self._children)

    def __getitem__(self, index: int) -> Rubric:
        return list(self._children.values())[index]
