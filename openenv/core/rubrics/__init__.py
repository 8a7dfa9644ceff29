"""``openenv.core.rubrics``: upstream's rubric API over ``openenv.rewards``."""

from .base import Rubric
from .containers import Gate, RubricDict, RubricList, Sequential, WeightedSum
from .llm_judge import LLMJudge
from .trajectory import ExponentialDiscountingTrajectoryRubric, TrajectoryRubric

__all__ = [
    "ExponentialDiscountingTrajectoryRubric",
    "Gate",
    "LLMJudge",
    "Rubric",
    "RubricDict",
    "RubricList",
    "Sequential",
    "TrajectoryRubric",
    "WeightedSum",
]
