"""Where a task set's folders come from: a folder of tasks, a Harbor dataset, a registry.

``resolve(source)`` gives ``{split: [task folder, ...]}`` and the entries it could not
use (name -> why) for any of:

- a folder of task folders: one split, ``train`` (as before);
- a Harbor dataset folder, a ``dataset.toml`` (Harbor's manifest: ``[dataset] name,
  version``, ``[[tasks]] name = "org/task"`` with a ``digest``) beside its task folders,
  each named by the part after ``org/``. ``[metadata.splits]`` names the splits, each a
  list of task names (``org/task`` or ``task``); without it, one split ``train``;
- a Harbor registry file (``registry.json``, the list of datasets Harbor's
  ``--registry-path`` reads: ``name``, ``version``, ``description``, ``tasks`` of
  ``{name, path, git_url, git_commit_id}``): every dataset, one split each named
  ``name@version``;
- ``name@version`` (or ``name``: its only or last listed version) of the registry file
  named by ``OPENENV_HARBOR_REGISTRY``: that dataset as one split, ``train``.

A registry task's ``path`` is taken relative to the registry file's folder. Tasks on git
(``git_url``) are not fetched (there may be no network): each is reported by name with
the reason, and the rest of the dataset is served. A manifest row's ``digest`` (Harbor's
content pin, harbor_digest.py) must match its folder, else that task is not served.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

from ._harbor import TaskFormatError
from .harbor_digest import pin_mismatch

MANIFEST = "dataset.toml"
REGISTRY_ENV = "OPENENV_HARBOR_REGISTRY"

Splits = dict[str, list[Path]]


def _dirs(root: Path) -> list[Path]:
    from ._tasks import task_dirs

    return task_dirs(root)


def resolve(source: str | Path) -> tuple[Splits, dict[str, str]]:
    """``({split: [task folder]}, {entry: why it is not served})`` for ``source``."""
    path = Path(source)
    if path.is_dir():
        return read_manifest(path) if (path / MANIFEST).is_file() else ({"train": _dirs(path)}, {})
    if path.is_file():
        datasets = read_registry(path)
        splits: Splits = {}
        broken: dict[str, str] = {}
        for spec in datasets:
            key = f"{spec['name']}@{spec['version']}"
            splits[key], missing = _registry_tasks(spec, path.parent)
            broken.update(missing)
        return splits, broken
    registry = os.environ.get(REGISTRY_ENV)
    if not registry:
        raise TaskFormatError(
            f"tasks {str(source)!r}: not a folder or a registry file, and no {REGISTRY_ENV} "
            "names a registry.json in which to look up name@version"
        )
    spec = pick(read_registry(Path(registry)), str(source))
    tasks, broken = _registry_tasks(spec, Path(registry).parent)
    return {"train": tasks}, broken


def read_manifest(folder: Path) -> tuple[Splits, dict[str, str]]:
    """The splits of a Harbor dataset folder (see the module docstring)."""
    try:
        with (folder / MANIFEST).open("rb") as f:
            doc = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise TaskFormatError(f"{folder / MANIFEST}: {exc}") from None
    rows = doc.get("tasks", [])
    named = isinstance(rows, list) and all(
        isinstance(r, dict) and isinstance(r.get("name"), str) for r in rows
    )
    if not named:
        raise TaskFormatError(f"{folder / MANIFEST}: [[tasks]] entries need a name")
    found: dict[str, Path] = {}
    broken: dict[str, str] = {}
    for row in rows:
        short = row["name"].rpartition("/")[2]
        task = folder / short
        if task.is_dir() and (why := pin_mismatch(task, row.get("digest"))):  # Harbor's content pin
            broken[short] = f"{MANIFEST} lists {row['name']!r}: {why}"
        elif task.is_dir():
            found[short] = task
        else:
            broken[short] = f"{MANIFEST} lists {row['name']!r}: no folder {short!r} beside it"
    wanted = (doc.get("metadata") or {}).get("splits")
    if wanted is None:
        return {"train": list(found.values())}, broken
    if not isinstance(wanted, dict) or not all(isinstance(v, list) for v in wanted.values()):
        raise TaskFormatError(f"{folder / MANIFEST}: [metadata.splits] must map splits to lists of tasks")
    splits: Splits = {}
    for split, names in wanted.items():
        unknown = [n for n in names if (s := str(n).rpartition("/")[2]) not in found and s not in broken]
        if unknown:
            raise TaskFormatError(f"{folder / MANIFEST}: split {split!r} names tasks not listed: {unknown}")
        splits[str(split)] = [found[s] for n in names if (s := str(n).rpartition("/")[2]) in found]
    return splits, broken


def read_registry(path: Path) -> list[dict[str, Any]]:
    """The datasets of a registry file, each with ``name``, ``version`` and ``tasks``."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise TaskFormatError(f"registry {str(path)!r}: {exc}") from None
    datasets = isinstance(doc, list) and all(
        isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("tasks"), list)
        for d in doc
    )
    if not datasets:
        raise TaskFormatError(f"registry {str(path)!r}: expected a list of datasets with a name and tasks")
    return [{**d, "version": str(d.get("version") or "head")} for d in doc]


def pick(datasets: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    """The dataset ``name@version`` (or ``name``: its last listed version)."""
    name, _, version = ref.partition("@")
    same = [d for d in datasets if d["name"] == name]
    chosen = [d for d in same if d["version"] == version] if version else same[-1:]
    if not chosen:
        listed = sorted(f"{d['name']}@{d['version']}" for d in datasets)
        raise TaskFormatError(
            f"dataset {ref!r} is not in the registry (it has {', '.join(listed) or 'none'})"
        )
    return chosen[0]


def _registry_tasks(spec: dict[str, Any], base: Path) -> tuple[list[Path], dict[str, str]]:
    tasks: list[Path] = []
    broken: dict[str, str] = {}
    for row in spec["tasks"]:
        name = str(row.get("name", "")) if isinstance(row, dict) else ""
        if not name or not isinstance(row.get("path"), str):
            raise TaskFormatError(f"dataset {spec['name']!r}: a task entry needs a name and a path")
        if row.get("git_url"):
            broken[name] = f"a task on git ({row['git_url']}): not fetched here; clone it and list its path"
            continue
        folder = (base / row["path"]).resolve()
        if folder.is_dir():
            tasks.append(folder)
        else:
            broken[name] = f"dataset {spec['name']!r}: no task folder at {row['path']!r}"
    return tasks, broken
