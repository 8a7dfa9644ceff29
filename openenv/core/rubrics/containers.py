"""Upstream's containers: ours, with children named as upstream names them
(``rubric_0``, ``rubric_1``... ; a ``Gate``'s child ``rubric``) and its weights rule."""

from __future__ import annotations

from collections.abc import Sequence

from ...rewards import Gate as _Gate
from ...rewards import Sequential as _Sequential
from ...rewards import WeightedSum as _WeightedSum
from ...rewards._collections import RubricDict as _RubricDict
from ...rewards._collections import RubricList as _RubricList
from ...rewards._rubric import Rubric as _Rubric
from ...rewards._rubric import as_rubric
from .base import Rubric

__all__ = ["Gate", "RubricDict", "RubricList", "Sequential", "WeightedSum"]


class Sequential(_Sequential, Rubric):
    def __init__(self, *rubrics: _Rubric) -> None:
        super().__init__(*[as_rubric(r, f"rubric_{i}") for i, r in enumerate(rubrics)])


class Gate(_Gate, Rubric):
    rubric = property(lambda self: self.child)

    def __init__(self, rubric: _Rubric, threshold: float = 1.0) -> None:
        super().__init__(as_rubric(rubric, "rubric"), threshold)


class WeightedSum(_WeightedSum, Rubric):
    weights = property(lambda self: list(self._weights.values()))

    def __init__(self, rubrics: Sequence[_Rubric], weights: Sequence[float]) -> None:
        super().__init__({f"rubric_{i}": r for i, r in enumerate(rubrics)}, weights, normalized=True)


class RubricList(_RubricList, Rubric):
    pass


class RubricDict(_RubricDict, Rubric):
    pass
