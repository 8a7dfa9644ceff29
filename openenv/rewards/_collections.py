"""Rubrics that hold rubrics for a parent that combines them itself (like
``torch.nn.ModuleList`` / ``ModuleDict``): ``RubricList`` and ``RubricDict``. They do
not score; calling one is an error."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ._rubric import Rubric, ScoreFn


class _Holder(Rubric):
    def forward(self, action: Any, observation: Any) -> float:
        name = type(self).__name__
        raise NotImplementedError(f"{name} does not combine scores: use it inside a rubric that does")

    def __len__(self) -> int:
        return len(self._children)


class RubricList(_Holder):
    """Children ``rubric_0``, ``rubric_1``... in order."""

    def __init__(self, rubrics: Sequence[Rubric | ScoreFn] | None = None, *, name: str | None = None) -> None:
        super().__init__(name)
        for rubric in rubrics or []:
            self.append(rubric)

    def append(self, rubric: Rubric | ScoreFn) -> None:
        self.add(f"rubric_{len(self._children)}", rubric)

    def extend(self, rubrics: Sequence[Rubric | ScoreFn]) -> None:
        for rubric in rubrics:
            self.append(rubric)

    def __getitem__(self, index: int) -> Rubric:
        return list(self._children.values())[index]

    def __iter__(self) -> Iterator[Rubric]:
        return iter(list(self._children.values()))


class RubricDict(_Holder):
    """Children by key (the key is the child's name in the breakdown)."""

    def __init__(
        self, rubrics: Mapping[str, Rubric | ScoreFn] | None = None, *, name: str | None = None
    ) -> None:
        super().__init__(name)
        self.update(rubrics or {})

    def __setitem__(self, key: str, rubric: Rubric | ScoreFn) -> None:
        self.add(key, rubric)

    def __getitem__(self, key: str) -> Rubric:
        return self._children[key]

    def __contains__(self, key: object) -> bool:
        return key in self._children

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._children))

    def keys(self) -> Iterator[str]:
        return iter(list(self._children))

    def values(self) -> Iterator[Rubric]:
        return iter(list(self._children.values()))

    def items(self) -> Iterator[tuple[str, Rubric]]:
        return iter(list(self._children.items()))

    def update(self, rubrics: Mapping[str, Rubric | ScoreFn]) -> None:
        for key, rubric in rubrics.items():
            self.add(key, rubric)
