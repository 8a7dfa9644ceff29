"""``HookStepResult``: a ``StepResult`` built as hooks build it, ``(observation, reward, done)``.

It is our ``openenv.StepResult`` (one model layer, ``isinstance`` holds) with
upstream's constructor: ``done`` is given instead of ``terminated``/``truncated``
(``truncated=True`` may be added), and the values given are kept as given rather than
read back from the observation. Fields can be reassigned, as on upstream's dataclass.

It also carries upstream's dataclass fields (``dataclasses.fields`` lists
``observation``, ``reward``, ``done``, ``metadata``), so a client that subclasses it
with ``@dataclass`` to add a field (``info``, say) gets upstream's constructor with its
own field appended, as it did on upstream's.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, TypeVar

from .._models import StepResult as _StepResult

ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")

__all__ = ["HookStepResult", "ObsT", "StateT"]


class HookStepResult(_StepResult[ObsT]):
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
        _, done, truncated = self._current()
        self._signals = (value, done, truncated)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @done.setter
    def done(self, value: bool) -> None:
        reward, _, truncated = self._current()
        self._signals = (reward, bool(value) and not truncated, truncated)

    def _current(self) -> tuple[float | None, bool, bool]:
        """The signals so far; none yet in the ``__init__`` that ``@dataclass`` writes
        for a subclass (it assigns each field in turn)."""
        try:
            signals = self._signals
        except AttributeError:
            signals = None
        if signals is None:
            return (None, False, False)
        return signals

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


@dataclasses.dataclass
class _UpstreamFields(Generic[ObsT]):
    """Upstream's fields, in its order; lent to ``HookStepResult`` for ``@dataclass`` subclasses."""

    observation: ObsT
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] | None = None


HookStepResult.__dataclass_fields__ = _UpstreamFields.__dataclass_fields__  # type: ignore[attr-defined]
HookStepResult.__dataclass_params__ = _UpstreamFields.__dataclass_params__  # type: ignore[attr-defined]
