"""The Task API's view of the env: one task per reasoning-gym family (no ``datasets`` needed).

A task's ``id`` is the family's name, what a reset's ``family`` option takes; its ``data``
holds ``family`` and ``config_fields`` (the names ``config`` may set).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from openenv.tasks import TaskSet


class _Rows:
    """A list of rows with the ``datasets.Dataset`` methods ``TaskSet`` reads."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows
        self.column_names = list(rows[0]) if rows else ["id"]

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return [row.get(key) for row in self._rows]
        return dict(self._rows[key])

    def select(self, indices: range) -> _Rows:
        return _Rows([self._rows[i] for i in indices])

    def to_list(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self._rows]


class FamilyTaskSet(TaskSet):
    """Every family registered in the installed reasoning-gym, sorted, as split ``train``."""

    def __init__(self) -> None:
        super().__init__("reasoning-gym", default_split="train")

    def _read(self) -> dict[str, Any]:
        from reasoning_gym.factory import DATASETS  # type: ignore[import-untyped]

        rows = []
        for name in sorted(DATASETS):
            config_class = DATASETS[name][1]
            fields = [f.name for f in dataclasses.fields(config_class) if f.name not in ("seed", "size")]
            rows.append({"id": name, "family": name, "config_fields": fields})
        return {"train": _Rows(rows)}
