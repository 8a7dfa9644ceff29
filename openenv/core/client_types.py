"""``StepResult`` as upstream env clients build it: ``StepResult(observation, reward, done)``.

It is our ``openenv.StepResult`` (one model layer, ``isinstance`` holds) with
upstream's constructor: ``done`` is given instead of ``terminated``/``truncated``
(``truncated=True`` may be added), and the values given are kept as given rather than
read back from the observation. Fields can be reassigned, as on upstream's dataclass.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .._models import StepResult as _StepResult

ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")

__all__ = ["ObsT", "StateT", "StepResult"]


class StepResult(_StepResult[ObsT]):
    """One step's outcome: ``observation``, ``reward``, ``done`` (and ``metadata``)."""

    __slots__ = ()

    def __init__(
        self,
        observation: ObsT,
        reward: float | None = None,
        done: bool = False,
        metadata: dict[str, Any] | None = None,
        *,
        truncated: bool = False,
    ) -> None:
        super().__init__(observation, reward, bool(done) and not truncated, truncated, metadata)
        self._signals = (reward, bool(done) and not truncated, truncated)

    @property
    def reward(self) -> float | None:
        assert self._signals is not None
        return self._signals[0]

    @reward.setter
    def reward(self, value: float | None) -> None:
        assert self._signals is not None
        self._signals = (value, self._signals[1], self._signals[2])

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @done.setter
    def done(self, value: bool) -> None:
        assert self._signals is not None
        self._signals = (self._signals[0], bool(value) and not self._signals[2], self._signals[2])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _StepResult):
            return NotImplemented
        return (self.observation, self.reward, self.done, self.metadata) == (
            other.observation,
            other.reward,
            other.done,
            other.metadata,
        )

    __hash__ = None  # type: ignore[assignment]
