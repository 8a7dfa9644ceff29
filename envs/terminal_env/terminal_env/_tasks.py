"""Tasks in the Harbor / Terminal-Bench 2 layout, served as an ``openenv.tasks.TaskSet``.

One folder per task::

    <task-id>/
      instruction.md        what the agent is told
      task.toml             [metadata] category, difficulty; [verifier] timeout_sec;
                            [agent] timeout_sec; [environment] requires = ["git"]
      tests/checks.toml     the verifier: [[check]] name, run (a bash command), and an
                            optional stdout; each run alone in a fresh sandboxed process,
                            judged outside it (see _verifier.py)
      tests/test.sh         or a Harbor verifier (TAP lines or $LOGS_DIR/reward.txt),
                            trusted: only for tests that run none of the agent's programs
      solution/solve.sh     a reference solution (tests prove it scores 1.0)
      environment/workdir/  optional: files copied into the agent's working directory
      environment/setup.sh  optional: run in the sandbox before the agent starts

Tasks that need an image of their own (``environment/Dockerfile`` alone) are skipped.
"""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv.tasks import Task, TaskSet

TASKS_DIR = Path(__file__).parent / "tasks"


@dataclass(frozen=True, slots=True)
class Check:
    """One check of ``tests/checks.toml``: a bash command and, optionally, the exact
    output it must print (trailing newlines aside); else it must exit 0."""

    name: str
    run: str
    stdout: str | None = None


def read_checks(path: Path) -> tuple[Check, ...]:
    """The checks of a ``checks.toml`` (none when the file is absent)."""
    if not path.is_file():
        return ()
    with path.open("rb") as f:
        rows = tomllib.load(f).get("check", [])
    checks = tuple(
        Check(str(r["name"]), str(r["run"]), None if r.get("stdout") is None else str(r["stdout"]))
        for r in rows
    )
    if not checks:
        raise ValueError(f"{path}: no [[check]] tables")
    return checks


@dataclass(frozen=True, slots=True)
class TerminalTask:
    """One task folder, read."""

    id: str
    path: Path
    instruction: str
    category: str = ""
    difficulty: str = ""
    verifier_timeout_s: float = 60.0
    agent_timeout_s: float | None = None
    requires: tuple[str, ...] = ()
    tags: tuple[str, ...] = field(default_factory=tuple)
    checks: tuple[Check, ...] = ()

    @classmethod
    def from_dir(cls, path: Path) -> TerminalTask:
        with (path / "task.toml").open("rb") as f:
            meta = tomllib.load(f)
        info = meta.get("metadata", {})
        return cls(
            id=path.name,
            path=path,
            instruction=(path / "instruction.md").read_text().strip(),
            category=str(info.get("category", "")),
            difficulty=str(info.get("difficulty", "")),
            verifier_timeout_s=float(meta.get("verifier", {}).get("timeout_sec", 60.0)),
            agent_timeout_s=meta.get("agent", {}).get("timeout_sec"),
            requires=tuple(meta.get("environment", {}).get("requires", ())),
            tags=tuple(info.get("tags", ())),
            checks=read_checks(path / "tests" / "checks.toml"),
        )

    @classmethod
    def from_task(cls, task: Task) -> TerminalTask:
        return cls.from_dir(Path(task.data["path"]))

    @property
    def missing_tools(self) -> list[str]:
        """Tools the task needs that this machine lacks."""
        return [tool for tool in self.requires if shutil.which(tool) is None]

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution(self) -> Path:
        return self.path / "solution" / "solve.sh"

    @property
    def workdir_files(self) -> Path | None:
        files = self.path / "environment" / "workdir"
        return files if files.is_dir() else None

    @property
    def setup_script(self) -> Path | None:
        script = self.path / "environment" / "setup.sh"
        return script if script.is_file() else None


def task_dirs(root: Path) -> list[Path]:
    """Task folders under ``root`` (those with ``instruction.md``, ``task.toml`` and
    ``tests/checks.toml`` or ``tests/test.sh``), sorted by name."""
    return sorted(
        p
        for p in root.iterdir()
        if (p / "instruction.md").is_file()
        and (p / "task.toml").is_file()
        and ((p / "tests/checks.toml").is_file() or (p / "tests/test.sh").is_file())
    )


class _Rows:
    """The few ``datasets.Dataset`` methods ``TaskSet`` reads, over a list of rows."""

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


class HarborTaskSet(TaskSet):
    """Task folders under ``root`` as a one-split (``train``) ``TaskSet``; each task's
    ``data`` holds ``path``, ``instruction``, ``category``, ``difficulty``.
    Reading them needs no ``datasets``."""

    def __init__(self, root: str | Path) -> None:
        super().__init__(str(root), default_split="train")
        self.root = Path(root)

    def _read(self) -> dict[str, Any]:
        rows = []
        for path in task_dirs(self.root):
            task = TerminalTask.from_dir(path)
            rows.append(
                {
                    "id": task.id,
                    "path": str(task.path),
                    "instruction": task.instruction,
                    "category": task.category,
                    "difficulty": task.difficulty,
                }
            )
        return {"train": _Rows(rows)}
