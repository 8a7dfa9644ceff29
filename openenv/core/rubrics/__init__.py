"""``openenv.core.rubrics``: upstream's rubric API over ``openenv.rewards``.

``LLMJudge`` is not provided (it needs a network LLM client).
"""

from ..._lazy import lazy_exports as _lazy_exports
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

__getattr__ = _lazy_exports(
    __name__,
    {},
    missing={"LLMJudge": "it needs a network LLM client; write an async forward, or serve one with "
             "`python -m openenv.rewards`"},
)[0]
