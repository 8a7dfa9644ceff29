"""``VerifiersTaskSet``: a verifiers taskset's tasks as our Task API's task set.

Each split is the taskset loaded with its own config (a taskset that reads a dataset
split from a config field gets ``splits={"train": {"split": "train"}, "test": {...}}``);
by default there is one split, ``train``. A task's id is its verifiers ``id`` when every
task of the split has one and no two are equal, else ``<split>-<index>``. The Task API
shows a task's id, name, description and prompt text, never its other fields (a
reference answer stays on the server).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..tasks import Rows, TaskSet
from ._load import load_tasks


class VerifiersTaskSet(TaskSet):
    """The tasks of verifiers taskset ``taskset`` (a module name), loaded once per process.

    Args:
        taskset: the verifiers taskset id (an installed module exporting a ``vf.Taskset``).
        config: its ``TasksetConfig`` fields, for every split.
        splits: split name -> config fields over ``config`` (default: ``{"train": {}}``).
        limit: serve the first ``limit`` tasks of each split (needed for an infinite taskset).
    """

    def __init__(
        self,
        taskset: str,
        *,
        config: Mapping[str, Any] | None = None,
        splits: Mapping[str, Mapping[str, Any]] | None = None,
        limit: int | None = None,
    ) -> None:
        super().__init__(f"verifiers:{taskset}")
        self.taskset = taskset
        self.config = dict(config or {})
        self.split_configs = {str(k): {**self.config, **v} for k, v in (splits or {"train": {}}).items()}
        self.limit = limit
        self._tasks: dict[str, list[Any]] = {}

    def __repr__(self) -> str:
        return f"VerifiersTaskSet({self.taskset!r})"

    def _read(self) -> dict[str, Any]:
        rows: dict[str, Any] = {}
        for split, config in self.split_configs.items():
            tasks = load_tasks(self.taskset, config, self.limit)
            self._tasks[split] = tasks
            ids = [task.data.id for task in tasks]
            own = None not in ids and len({str(i) for i in ids}) == len(ids)
            rows[split] = Rows(
                [_row(task, str(task.data.id) if own else f"{split}-{i}") for i, task in enumerate(tasks)]
            )
        return rows

    def verifiers_task(self, split: str, index: int) -> Any:
        """The verifiers ``Task`` behind task ``index`` of ``split`` (as ``get`` numbers them)."""
        self.load()
        return self._tasks[split][index]


def _row(task: Any, task_id: str) -> dict[str, Any]:
    data = task.data
    return {
        "id": task_id,
        "name": data.name,
        "description": data.description,
        "prompt": data.prompt_text,
    }
