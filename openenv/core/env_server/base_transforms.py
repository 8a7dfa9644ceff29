"""Two ready-made transforms: a chain of transforms, and one that changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .interfaces import Transform

__all__ = ["CompositeTransform", "NullTransform"]


class CompositeTransform(Transform[Any]):
    """Applies its transforms in order."""

    def __init__(self, transforms: Sequence[Transform[Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, observation: Any) -> Any:
        for transform in self.transforms:
            observation = transform(observation)
        return observation


class NullTransform(Transform[Any]):
    """Returns the observation unchanged."""

    def __call__(self, observation: Any) -> Any:
        return observation
