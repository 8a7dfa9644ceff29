"""Upstream's containers (``Sequential``, ``Gate``, ``WeightedSum``, ``RubricList``,
``RubricDict``) as plans for our drivers: one definition, sync and async scoring, and
children named as upstream names them (``rubric_0``, ``rubric_1``... or the dict keys)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...rewards import Rubric as _Rubric
from ...rewards._rubric import Plan
from .base import Rubric, _maybe_await, plan_forward

__all__ = ["Gate", "RubricDict", "RubricList", "Sequential", "WeightedSum"]


class Sequential(Rubric):
    """Children in order; the first 0.0 stops it (0.0), else the last child's score
    (1.0 when empty)."""

    def __init__(self, *rubrics: _Rubric) -> None:
        super().__init__()
        for i, rubric in enumerate(rubrics):
            setattr(self, f"rubric_{i}", rubric)
        self._rubric_list = list(rubrics)

    def plan(self, action: Any, observation: Any) -> Plan:
        result = 1.0
        for rubric in self._rubric_list:
            score = yield rubric
            if score == 0.0:
                return 0.0
            result = score
        return result

    def forward(self, action: Any, observation: Any) -> float:
        return plan_forward(self, action, observation)

    def __call__(self, action: Any, observation: Any) -> Any:
        # Upstream's Sequential answers an awaitable whenever a loop is running.
        if _loop_running():
            return self.acall(action, observation)
        return super().__call__(action, observation)

    def __len__(self) -> int:
        return len(self._rubric_list)

    def __getitem__(self, index: int) -> _Rubric:
        return self._rubric_list[index]


class Gate(Rubric):
    """The child's score when it reaches ``threshold``, else 0.0."""

    def __init__(self, rubric: _Rubric, threshold: float = 1.0) -> None:
        super().__init__()
        self.rubric = rubric
        self.threshold = threshold

    def plan(self, action: Any, observation: Any) -> Plan:
        score = yield self.rubric
        return 0.0 if score < self.threshold else score

    def forward(self, action: Any, observation: Any) -> float:
        return plan_forward(self, action, observation)


class WeightedSum(Rubric):
    """``sum(weight * child)``; the weights must sum to 1.0 (upstream's rule)."""

    def __init__(self, rubrics: Sequence[_Rubric], weights: Sequence[float]) -> None:
        super().__init__()
        if len(rubrics) != len(weights):
            raise ValueError(f"{len(rubrics)} rubrics but {len(weights)} weights: they must match")
        if abs(sum(weights) - 1.0) > 1e-6:
            raise ValueError(f"Weights must sum to 1.0, got {sum(weights)}")
        for i, rubric in enumerate(rubrics):
            setattr(self, f"rubric_{i}", rubric)
        self._rubric_list = list(rubrics)
        self._weights = [float(w) for w in weights]

    def plan(self, action: Any, observation: Any) -> Plan:
        total = 0.0
        for rubric, weight in zip(self._rubric_list, self._weights, strict=True):
            total += weight * (yield rubric)
        return total

    def forward(self, action: Any, observation: Any) -> float:
        return plan_forward(self, action, observation)

    async def _score_async(self, action: Any, observation: Any) -> float:
        # Async children are scored concurrently, as upstream does.
        pre, post = self._hooks()
        for hook in pre:
            await _maybe_await(hook(self, action, observation))
        scores = await asyncio.gather(*(r._score_async(action, observation) for r in self._rubric_list))
        total = self._record(sum(w * s for w, s in zip(self._weights, scores, strict=True)))
        for after in post:
            await _maybe_await(after(self, action, observation, total))
        return total

    @property
    def weights(self) -> list[float]:
        return list(self._weights)


class RubricList(Rubric):
    """A list of rubrics for a parent that combines them itself (like ``nn.ModuleList``)."""

    def __init__(self, rubrics: Sequence[_Rubric] | None = None) -> None:
        super().__init__()
        self._rubrics: list[_Rubric] = []
        self.extend(rubrics or [])

    def forward(self, action: Any, observation: Any) -> float:
        raise NotImplementedError("RubricList does not combine scores: use it inside a rubric that does")

    def append(self, rubric: _Rubric) -> None:
        setattr(self, f"rubric_{len(self._rubrics)}", rubric)
        self._rubrics.append(rubric)

    def extend(self, rubrics: Sequence[_Rubric]) -> None:
        for rubric in rubrics:
            self.append(rubric)

    def __len__(self) -> int:
        return len(self._rubrics)

    def __getitem__(self, index: int) -> _Rubric:
        return self._rubrics[index]

    def __iter__(self) -> Iterator[_Rubric]:
        return iter(self._rubrics)


class RubricDict(Rubric):
    """Rubrics by name for a parent that picks one (like ``nn.ModuleDict``)."""

    def __init__(self, rubrics: Mapping[str, _Rubric] | None = None) -> None:
        super().__init__()
        self._rubric_dict: dict[str, _Rubric] = {}
        self.update(rubrics or {})

    def forward(self, action: Any, observation: Any) -> float:
        raise NotImplementedError("RubricDict does not combine scores: use it inside a rubric that does")

    def __setitem__(self, key: str, rubric: _Rubric) -> None:
        setattr(self, key, rubric)
        self._rubric_dict[key] = rubric

    def __getitem__(self, key: str) -> _Rubric:
        return self._rubric_dict[key]

    def __contains__(self, key: object) -> bool:
        return key in self._rubric_dict

    def __len__(self) -> int:
        return len(self._rubric_dict)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rubric_dict)

    def keys(self) -> Iterator[str]:
        return iter(self._rubric_dict.keys())

    def values(self) -> Iterator[_Rubric]:
        return iter(self._rubric_dict.values())

    def items(self) -> Iterator[tuple[str, _Rubric]]:
        return iter(self._rubric_dict.items())

    def update(self, rubrics: Mapping[str, _Rubric]) -> None:
        for key, rubric in rubrics.items():
            self[key] = rubric


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
