"""Which tasks a run plays: from the env's Task API (``openenv.tasks``; upstream's
routes), or, for an env without tasks, seeds (task ``seed-3`` is ``reset(seed=3)``).

A selection is a split (default: ``test`` when the env has it, else its first split),
ids (in that order), and a count (the first N of what is left; None: all). Without a
Task API an id is a seed (``seed-3``) or the env's own name for a task, given to
``reset`` as ``task_id`` (the browser env's MiniWoB pages).
"""

from __future__ import annotations

import urllib.error
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import EvalError
from ._env import EnvHandle


@dataclass(frozen=True)
class TaskRef:
    """One task: its id, where it comes from, and the reset options that pick it."""

    id: str
    split: str | None = None
    index: int | None = None
    category: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    reset_options: Mapping[str, Any] = field(default_factory=dict)
    reset_seed: int | None = None


@dataclass(frozen=True)
class TaskSelection:
    """``split``, ``ids`` and ``count`` (see the module docstring)."""

    split: str | None = None
    ids: Sequence[str] = ()
    count: int | None = None

    def __post_init__(self) -> None:
        if self.count is not None and self.count < 1:
            raise EvalError(f"the task count must be at least 1, not {self.count}")


def _task_api_name(env: EnvHandle) -> str | None:
    try:
        names = env.get("/list_environments", timeout_s=10.0)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return str(names[0]) if isinstance(names, list) and names else None


def select_tasks(env: EnvHandle, selection: TaskSelection) -> list[TaskRef]:
    """The tasks ``selection`` names on ``env``; ``EvalError`` for an unknown split or id."""
    name = _task_api_name(env)
    if name is None:
        return _seed_tasks(selection)
    splits = [str(s["name"]) for s in env.get(f"/{name}/splits")]
    split = selection.split or ("test" if "test" in splits else splits[0] if splits else None)
    if split not in splits:
        raise EvalError(f"{env.name} has no split {split!r}; its splits: {', '.join(splits)}")
    rows = env.post(f"/{name}/tasks", {"split": split}).get("tasks", [])
    tasks = [_from_row(row, split) for row in rows]
    if selection.ids:
        by_id = {t.id: t for t in tasks}
        missing = [i for i in selection.ids if i not in by_id]
        if missing:
            raise EvalError(f"{env.name} has no task {missing[0]!r} in split {split!r}")
        tasks = [by_id[i] for i in selection.ids]
    return tasks[: selection.count] if selection.count else tasks


def _from_row(row: Mapping[str, Any], split: str) -> TaskRef:
    data = row.get("data") or {}
    task_id = str(row.get("id"))
    category = data.get("category") or data.get("difficulty") or ""
    return TaskRef(
        id=task_id,
        split=split,
        index=row.get("index"),
        category=str(category),
        data=data,
        reset_options={"task_id": task_id, "split": split},
    )


def _seed_tasks(selection: TaskSelection) -> list[TaskRef]:
    if selection.split:
        raise EvalError(f"this env serves no tasks (no Task API): --split {selection.split} cannot apply")
    if not selection.ids:
        return [TaskRef(id=f"seed-{s}", reset_seed=s) for s in range(selection.count or 10)]
    tasks = []
    for task_id in selection.ids:
        seed = str(task_id).removeprefix("seed-")
        if seed.isdigit():
            tasks.append(TaskRef(id=f"seed-{seed}", reset_seed=int(seed)))
        else:  # the env's own name for a task, given to reset as task_id
            tasks.append(TaskRef(id=str(task_id), reset_options={"task_id": str(task_id)}))
    return tasks[: selection.count] if selection.count else tasks
