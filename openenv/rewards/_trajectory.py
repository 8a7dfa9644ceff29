"""Trajectory rubrics: a delayed reward, paid when the episode ends.

A ``TrajectoryRubric`` records every ``(action, observation)`` of the episode and
scores ``intermediate`` (0.0) until an observation is ``done``; then it returns
``score_trajectory(trajectory)``. ``DiscountedTrajectoryRubric`` also assigns credit
back over the steps: ``step_rewards()[t] = gamma ** (T - 1 - t) * final``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._rubric import Rubric

Trajectory = list[tuple[Any, Any]]


class TrajectoryRubric(Rubric):
    """Pays at the end of the episode. Pass ``score`` or override ``score_trajectory``."""

    def __init__(
        self,
        score: Callable[[Trajectory], float] | None = None,
        *,
        intermediate: float = 0.0,
        name: str | None = None,
    ) -> None:
        super().__init__(name or getattr(score, "__name__", None))
        self._score = score
        self.intermediate = intermediate
        self._trajectory: Trajectory = []
        self.final_score: float | None = None

    @property
    def trajectory(self) -> Trajectory:
        """The ``(action, observation)`` steps recorded so far (a copy)."""
        return list(self._trajectory)

    def forward(self, action: Any, observation: Any) -> float:
        self._trajectory.append((action, observation))
        if not getattr(observation, "done", False):
            return self.intermediate
        self.final_score = float(self.score_trajectory(self._trajectory))
        return self.final_score

    def score_trajectory(self, trajectory: Trajectory) -> float:
        """The episode's score; called once, on the step that is ``done``."""
        if self._score is None:
            raise NotImplementedError(f"{type(self).__name__}: pass score= or override score_trajectory()")
        return self._score(trajectory)

    def step_rewards(self, rescore: bool = False) -> list[float]:
        """Credit per step once the episode ended: all of it on the last step.
        ``rescore``: score the steps recorded so far now, ended or not (upstream's
        ``compute_step_rewards``)."""
        final = self._final(rescore)
        if final is None:
            return []
        return [0.0] * (len(self._trajectory) - 1) + [final]

    def _final(self, rescore: bool) -> float | None:
        if rescore and self._trajectory:
            return float(self.score_trajectory(self._trajectory))
        return self.final_score

    def reset_self(self) -> None:
        self._trajectory = []
        self.final_score = None


class DiscountedTrajectoryRubric(TrajectoryRubric):
    """A trajectory rubric whose credit decays backwards from the end by ``gamma``."""

    def __init__(
        self,
        score: Callable[[Trajectory], float] | None = None,
        *,
        gamma: float = 0.99,
        intermediate: float = 0.0,
        name: str | None = None,
    ) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        super().__init__(score, intermediate=intermediate, name=name)
        self.gamma = gamma

    def step_rewards(self, rescore: bool = False) -> list[float]:
        final = self._final(rescore)
        if final is None:
            return []
        n = len(self._trajectory)
        return [final * self.gamma ** (n - 1 - t) for t in range(n)]
