"""Upstream's trajectory rubrics over ours (``openenv.rewards.TrajectoryRubric``).

``TrajectoryRubric(intermediate_reward=0.0)``: record every step, pay
``score_trajectory(trajectory)`` on the ``done`` step; subclasses implement
``score_trajectory`` and ``compute_step_rewards``.
``ExponentialDiscountingTrajectoryRubric(gamma)`` assigns ``gamma ** (T-1-t) * final``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from ...rewards import DiscountedTrajectoryRubric as _Discounted
from ...rewards import TrajectoryRubric as _Trajectory
from .base import Rubric

__all__ = ["ExponentialDiscountingTrajectoryRubric", "TrajectoryRubric"]

Trajectory = list[tuple[Any, Any]]


class TrajectoryRubric(Rubric, _Trajectory):
    """Pays at the end of the episode; implement ``score_trajectory`` and ``compute_step_rewards``."""

    def __init__(self, intermediate_reward: float = 0.0) -> None:
        self._steps: Trajectory = []
        _Trajectory.__init__(self, intermediate=intermediate_reward)
        self._forward_hooks = []
        self._forward_pre_hooks = []

    def forward(self, action: Any, observation: Any) -> float:
        self._steps.append((action, observation))
        if not getattr(observation, "done", False):
            return self.intermediate
        self.final_score = float(self.score_trajectory(self._steps))
        return self.final_score

    @abstractmethod
    def score_trajectory(self, trajectory: Trajectory) -> float:
        """The episode's score, on the ``done`` step."""

    @abstractmethod
    def compute_step_rewards(self) -> list[float]:
        """Credit per step of the recorded trajectory."""

    @property
    def intermediate_reward(self) -> float:
        return self.intermediate

    @intermediate_reward.setter
    def intermediate_reward(self, value: float) -> None:
        self.intermediate = value

    @property
    def trajectory(self) -> Trajectory:
        """The steps recorded so far (a copy)."""
        return list(self._steps)

    @trajectory.setter
    def trajectory(self, value: Trajectory) -> None:
        self._steps = list(value)

    @property
    def _trajectory(self) -> Trajectory:
        return self._steps

    @_trajectory.setter
    def _trajectory(self, value: Trajectory) -> None:
        self._steps = value

    def reset(self) -> None:
        """Forget the recorded episode (call it on ``env.reset()``)."""
        _Trajectory.reset(self)

    def state_dict(self) -> dict[str, Any]:
        return {"intermediate_reward": self.intermediate}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "intermediate_reward" in state:
            self.intermediate = state["intermediate_reward"]


class ExponentialDiscountingTrajectoryRubric(TrajectoryRubric):
    """Credit ``gamma ** (T - 1 - t) * score_trajectory(...)`` for step ``t`` of ``T``."""

    gamma: float

    def __init__(self, gamma: float = 0.99, intermediate_reward: float = 0.0) -> None:
        super().__init__(intermediate_reward=intermediate_reward)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.gamma = gamma

    def compute_step_rewards(self) -> list[float]:
        if not self._steps:
            return []
        self.final_score = float(self.score_trajectory(self._steps))
        return _Discounted.step_rewards(self)  # type: ignore[arg-type]

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "gamma": self.gamma}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        if "gamma" in state:
            self.gamma = state["gamma"]
