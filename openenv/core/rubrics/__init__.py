"""``openenv.core.rubrics``: upstream's rubric API over ``openenv.rewards``.

``LLMJudge`` is not provided (it needs a network LLM client).
"""

from .base import Rubric
from .containers import Gate, RubricDict, RubricList, Sequential, WeightedSum
from .trajectory import ExponentialDiscountingTrajectoryRubric, TrajectoryRubric

__all__ = [
    "ExponentialDiscountingTrajectoryRubric",
    "Gate",
    "Rubric",
    "RubricDict",
    "RubricList",
    "Sequential",
    "TrajectoryRubric",
    "WeightedSum",
]
