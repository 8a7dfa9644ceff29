"""``TaskSet``: tasks from a Hugging Face ``datasets`` dataset, picked at reset.

The dataset is loaded once per process, on first use (the server loads it at startup,
off the event loop); nothing is loaded per session.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._exceptions import TaskNotFound, ValidationFailed
from .._extras import require
from .._types import JSON_INTEGER

#: File suffix -> the ``datasets`` builder that reads it.
BUILDERS = {
    ".jsonl": "json",
    ".json": "json",
    ".parquet": "parquet",
    ".csv": "csv",
    ".arrow": "arrow",
}


@dataclass(frozen=True, slots=True)
class Task:
    """One row of a task set: its ``id``, ``split``, ``index`` in the split, and ``data``."""

    id: str
    split: str
    index: int
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The task as the Task API routes send it."""
        return {"id": self.id, "split": self.split, "index": self.index, "data": self.data}


class TaskOptions(BaseModel):
    """Reset options that choose a task; use as an env's ``reset_options_model`` (or extend).

    ``task_id`` wins over ``index``; without either, the task comes from the reset
    ``seed`` (deterministically), or from a per-process cursor when there is no seed.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = None
    index: Annotated[int, Field(ge=0), JSON_INTEGER] | None = None
    split: str | None = None


class TaskSet:
    """Tasks read with ``datasets.load_dataset``; declared once per env class.

    ``source`` is one file (``.jsonl``, ``.json``, ``.parquet``, ``.csv``, ``.arrow``:
    one split named ``"train"``), a ``{split: file}`` mapping, a folder of such files
    (one split per file, named by its stem: ``test.jsonl`` is split ``"test"``), a hub
    dataset id or a folder in the hub's layout (``load_dataset`` resolves both), or a
    ``Dataset`` / ``DatasetDict`` already in memory. ``id_column`` names each task; without that
    column a task's id is ``"<split>-<index>"``. Other keyword arguments go to
    ``load_dataset`` (``name``, ``revision``, ``cache_dir``, ...).

    >>> tasks = TaskSet("tests/data/quiz.jsonl")  # doctest: +SKIP
    >>> tasks.pick({"index": 3}).data["question"]  # doctest: +SKIP
    """

    def __init__(
        self,
        source: Any,
        *,
        id_column: str = "id",
        default_split: str | None = None,
        **load_kwargs: Any,
    ) -> None:
        self.source = source
        self.id_column = id_column
        self._default_split = default_split
        self.load_kwargs = load_kwargs
        self._splits: dict[str, Any] | None = None
        self._ids: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()
        self._cursor = itertools.count()

    def __repr__(self) -> str:
        return f"TaskSet({self.source!r}, id_column={self.id_column!r})"

    # --- loading ------------------------------------------------------------------

    def load(self) -> TaskSet:
        """Load the dataset now (idempotent, thread-safe); returns ``self``."""
        if self._splits is None:
            with self._lock:
                if self._splits is None:
                    self._splits = self._read()
        return self

    @property
    def loaded(self) -> bool:
        return self._splits is not None

    def _read(self) -> dict[str, Any]:
        datasets = require("datasets", extra="tasks", feature="openenv.tasks")
        # A server log is no place for "Generating train split" progress bars.
        datasets.disable_progress_bars()
        src = self.source
        if isinstance(src, datasets.DatasetDict):
            return dict(src)
        if isinstance(src, datasets.Dataset):
            return {str(src.split or "train"): src}
        if isinstance(src, Mapping):
            files = {str(k): str(v) for k, v in src.items()}
            loaded = datasets.load_dataset(
                _builder(next(iter(files.values()))), data_files=files, **self.load_kwargs
            )
        elif isinstance(src, str | Path) and Path(src).is_file():
            loaded = datasets.load_dataset(_builder(str(src)), data_files=str(src), **self.load_kwargs)
        elif isinstance(src, str | Path) and (files := _split_files(Path(src))):
            loaded = datasets.load_dataset(
                _builder(next(iter(files.values()))), data_files=files, **self.load_kwargs
            )
        else:  # a hub id, or a folder laid out as on the hub: load_dataset resolves both
            loaded = datasets.load_dataset(str(src), **self.load_kwargs)
        if isinstance(loaded, datasets.Dataset):
            return {"train": loaded}
        return dict(loaded)

    # --- lookups ------------------------------------------------------------------

    @property
    def splits(self) -> list[str]:
        """Split names, in the dataset's order."""
        return list(self._data())

    @property
    def default_split(self) -> str:
        """``default_split`` if given, else ``"train"`` if present, else the first split."""
        names = self.splits
        if self._default_split is not None:
            return self._default_split
        return "train" if "train" in names else names[0]

    def num_tasks(self, split: str | None = None) -> int:
        return len(self._split(split))

    def get(self, index: int, split: str | None = None) -> Task:
        """The task at ``index`` of ``split``; ``TaskNotFound`` when out of range."""
        name = self.default_split if split is None else split
        ds = self._split(name)
        if not 0 <= index < len(ds):
            raise TaskNotFound(
                f"no task at index {index} in split {name!r} ({len(ds)} tasks)", split=name, index=index
            )
        return self._task(name, index, ds[index])

    def by_id(self, task_id: str, split: str | None = None) -> Task:
        """The task with this id, in ``split`` or else in any split; ``TaskNotFound``."""
        names = (
            [split] if split else [self.default_split, *(s for s in self.splits if s != self.default_split)]
        )
        for name in names:
            index = self._id_index(name).get(str(task_id))
            if index is not None:
                return self.get(index, name)
        where = f"split {split!r}" if split else "any split"
        raise TaskNotFound(f"no task with id {task_id!r} in {where}", split=split, task_id=str(task_id))

    def range(
        self, split: str | None = None, start: int | None = None, stop: int | None = None
    ) -> list[Task]:
        """Tasks ``[start:stop]`` of ``split`` (Python slice bounds)."""
        name = self.default_split if split is None else split
        ds = self._split(name)
        first, last, _ = slice(start, stop).indices(len(ds))
        if last <= first:
            return []
        rows = ds.select(range(first, last)).to_list()
        return [self._task(name, first + i, row) for i, row in enumerate(rows)]

    def pick(
        self, options: TaskOptions | Mapping[str, Any] | None = None, *, seed: int | None = None
    ) -> Task:
        """Choose a task for a reset: by ``task_id``, else ``index``, else from ``seed``.

        ``options`` is a ``TaskOptions`` (or an extension of it), a mapping with the same
        keys, or None. The same seed always picks the same task; without a seed, tasks
        are taken in turn from a per-process cursor.
        """
        opts = _options(options)
        if opts.task_id is not None:
            return self.by_id(opts.task_id, opts.split)
        split = self.default_split if opts.split is None else opts.split
        if opts.index is not None:
            return self.get(opts.index, split)
        n = self.num_tasks(split)
        if n == 0:
            raise TaskNotFound(f"split {split!r} has no tasks", split=split)
        index = random.Random(seed).randrange(n) if seed is not None else next(self._cursor) % n
        return self.get(index, split)

    # --- internals ----------------------------------------------------------------

    def _data(self) -> dict[str, Any]:
        if self._splits is None:
            self.load()
        assert self._splits is not None
        return self._splits

    def _split(self, split: str | None) -> Any:
        data = self._data()
        name = self.default_split if split is None else split
        try:
            return data[name]
        except KeyError:
            raise TaskNotFound(
                f"no split {name!r}; splits: {', '.join(data)}", split=name, splits=list(data)
            ) from None

    def _id_index(self, split: str) -> dict[str, int]:
        ids = self._ids.get(split)
        if ids is None:
            ds = self._split(split)
            if self.id_column in ds.column_names:
                ids = {str(v): i for i, v in enumerate(ds[self.id_column])}
            else:
                ids = {f"{split}-{i}": i for i in range(len(ds))}
            self._ids[split] = ids
        return ids

    def _task(self, split: str, index: int, row: dict[str, Any]) -> Task:
        raw = row.get(self.id_column)
        task_id = str(raw) if raw is not None else f"{split}-{index}"
        return Task(id=task_id, split=split, index=index, data=row)


def _builder(path: str) -> str:
    suffix = Path(path).suffix.lower()
    try:
        return BUILDERS[suffix]
    except KeyError:
        raise ValueError(f"cannot tell the format of {path!r}: use one of {', '.join(BUILDERS)}") from None


def _split_files(folder: Path) -> dict[str, str]:
    """``{stem: file}`` for a folder whose top-level data files share one format."""
    if not folder.is_dir():
        return {}
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in BUILDERS)
    if not found or len({BUILDERS[p.suffix.lower()] for p in found}) != 1:
        return {}
    return {p.stem: str(p) for p in found}


def _options(options: TaskOptions | Mapping[str, Any] | None) -> TaskOptions:
    if options is None:
        return TaskOptions()
    if isinstance(options, TaskOptions):
        return options
    if isinstance(options, BaseModel):  # another options model: read the task fields it has
        options = {k: getattr(options, k) for k in TaskOptions.model_fields if hasattr(options, k)}
    try:
        return TaskOptions.model_validate(
            {k: v for k, v in dict(options).items() if k in TaskOptions.model_fields}
        )
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        raise ValidationFailed(
            f"invalid task options: {errors[0]['msg']}",
            errors=[{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in errors],
        ) from None


def task_set_of(env_class: type) -> TaskSet | None:
    """The ``TaskSet`` an env class declares as ``task_set``, or None."""
    value = getattr(env_class, "task_set", None)
    return value if isinstance(value, TaskSet) else None
