"""Upstream's trajectory rubrics: ours, with upstream's constructor arguments, abstract
``score_trajectory`` / ``compute_step_rewards`` and checkpoint keys."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from ...rewards import DiscountedTrajectoryRubric as _Discounted
from ...rewards import TrajectoryRubric as _Trajectory
from .base import Rubric

__all__ = ["ExponentialDiscountingTrajectoryRubric", "TrajectoryRubric"]


class TrajectoryRubric(_Trajectory, Rubric):
    """Pays at the end of the episode; implement ``score_trajectory`` and ``compute_step_rewards``."""

    state_fields = {"intermediate_reward": "intermediate"}
    intermediate_reward = property(
        lambda self: self.intermediate, lambda self, value: setattr(self, "intermediate", value)
    )

    def __init__(self, intermediate_reward: float = 0.0) -> None:
        super().__init__(intermediate=intermediate_reward)

    @abstractmethod
    def score_trajectory(self, trajectory: list[tuple[Any, Any]]) -> float:
        """The episode's score, on the ``done`` step."""

    @abstractmethod
    def compute_step_rewards(self) -> list[float]:
        """Credit per step of the recorded trajectory."""


class ExponentialDiscountingTrajectoryRubric(TrajectoryRubric, _Discounted):
    """Credit ``gamma ** (T - 1 - t) * score_trajectory(...)`` for step ``t`` of ``T``."""

    state_fields = {"intermediate_reward": "intermediate", "gamma": "gamma"}

    def __init__(self, gamma: float = 0.99, intermediate_reward: float = 0.0) -> None:
        _Discounted.__init__(self, gamma=gamma, intermediate=intermediate_reward)

    def compute_step_rewards(self) -> list[float]:
        return self.step_rewards(rescore=True)
