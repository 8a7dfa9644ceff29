"""``Rows``: a split held as a list of dicts, for task sets built in code, not loaded."""

from __future__ import annotations

from typing import Any


class Rows:
    """The few ``datasets.Dataset`` methods ``TaskSet`` reads, over a list of rows
    (a subclass's ``_load`` may return ``{"train": Rows(rows)}`` with no ``datasets``)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows
        self.column_names = list(rows[0]) if rows else ["id"]

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return [row.get(key) for row in self._rows]
        return dict(self._rows[key])

    def select(self, indices: range) -> Rows:
        return Rows([self._rows[i] for i in indices])

    def to_list(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self._rows]
