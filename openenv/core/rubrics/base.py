"""Upstream's ``Rubric``: ours (``openenv.rewards.Rubric``) with an abstract ``forward``
and upstream's calling convention (``rubric(a, o)`` is awaitable when async)."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from typing import Any

from ...rewards import Rubric as _Rubric

__all__ = ["Rubric"]


class Rubric(_Rubric, metaclass=ABCMeta):
    """Subclass and implement ``forward(action, observation) -> float`` (or ``async def``)."""

    awaitable_call = True

    @abstractmethod
    def forward(self, action: Any, observation: Any) -> float:
        """Score one step."""
