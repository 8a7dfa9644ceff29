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

A task scored by ``tests/checks.toml`` runs sandboxed, without Docker, even where it has
an ``environment/Dockerfile`` and a ``tests/test.sh``: those are for Harbor (the built-in
tasks carry them: _harbor_files.py). Any other task with an image of its own
(``environment/Dockerfile``, or ``docker_image`` in ``task.toml``) runs each session in
its own container of that image and is scored by its ``tests/test.sh`` after the agent's
turn (see _image.py, _container.py,
_container_verifier.py and docs/harbor.md); ``[environment]`` settings: _harbor.py;
``environment/docker-compose.yaml`` (services beside it): _compose.py.

A folder that looks like a task (it has any of the files above) but cannot be read is
not served: ``HarborTaskSet.broken`` says why, and a reset that names it gets that reason.
"""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from openenv.tasks import Rows, Task, TaskSet

from ._compose import read_compose
from ._harbor import ImageSettings, TaskFormatError

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
    image: ImageSettings | None = None

    @classmethod
    def from_dir(cls, path: Path) -> TerminalTask:
        """Read a task folder; ``TaskFormatError`` names what is missing or wrong."""
        for name in ("instruction.md", "task.toml"):
            if not (path / name).is_file():
                raise TaskFormatError(f"task {path.name!r}: no {name}")
        try:
            with (path / "task.toml").open("rb") as f:
                meta = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise TaskFormatError(f"task {path.name!r}: task.toml: {exc}") from None
        try:
            return cls._from_meta(path, meta)
        except TaskFormatError as exc:
            raise TaskFormatError(f"task {path.name!r}: task.toml: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError, tomllib.TOMLDecodeError) as exc:
            raise TaskFormatError(f"task {path.name!r}: {type(exc).__name__}: {exc}") from None

    @classmethod
    def _from_meta(cls, path: Path, meta: dict[str, Any]) -> TerminalTask:
        info = meta.get("metadata", {})
        image = None
        sandboxed = (path / "tests" / "checks.toml").is_file()  # its Dockerfile is Harbor's
        if not sandboxed and (
            (path / "environment" / "Dockerfile").is_file() or meta.get("environment", {}).get("docker_image")
        ):
            image = ImageSettings.from_toml(meta)
            compose = read_compose(path / "environment")
            if compose is not None:
                image = replace(image, compose=compose)
            if not (path / "tests" / "test.sh").is_file():
                raise TaskFormatError("a task with an image of its own needs tests/test.sh")
        elif not ((path / "tests/checks.toml").is_file() or (path / "tests/test.sh").is_file()):
            raise TaskFormatError("no tests/checks.toml or tests/test.sh")
        return cls(
            id=path.name,
            path=path,
            instruction=(path / "instruction.md").read_text().strip(),
            category=str(info.get("category", "")),
            difficulty=str(info.get("difficulty", "")),
            verifier_timeout_s=float(meta.get("verifier", {}).get("timeout_sec", 60.0)),
            agent_timeout_s=_seconds(meta.get("agent", {}).get("timeout_sec")),
            requires=tuple(meta.get("environment", {}).get("requires", ())),
            tags=tuple(info.get("tags", ())),
            checks=() if image else read_checks(path / "tests" / "checks.toml"),
            image=image,
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


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskFormatError(f"[agent] timeout_sec = {value!r}: expected a positive number")
    return float(value)


_TASK_ENTRIES = ("instruction.md", "task.toml", "tests", "environment", "solution")


def task_dirs(root: Path) -> list[Path]:
    """Folders under ``root`` that look like tasks (any of ``instruction.md``,
    ``task.toml``, ``tests/``, ``environment/``, ``solution/``), sorted by name."""
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir()
        and not p.name.startswith((".", "_"))
        and any((p / name).exists() for name in _TASK_ENTRIES)
    )


class HarborTaskSet(TaskSet):
    """Task folders as a ``TaskSet``: ``source`` is a folder of tasks (one split,
    ``train``), a Harbor dataset folder (``dataset.toml``), a registry file, or
    ``name@version`` of the registry ``OPENENV_HARBOR_REGISTRY`` names (_datasets.py).
    Each task's ``data`` holds ``path``, ``instruction``, ``category``, ``difficulty``.
    Reading them needs no ``datasets``."""

    def __init__(self, root: str | Path) -> None:
        super().__init__(str(root), default_split="train")
        self.root = Path(root)
        #: Task folders (or dataset entries) that could not be read: id -> why (not served).
        self.broken: dict[str, str] = {}

    def _read(self) -> dict[str, Any]:
        from ._datasets import resolve

        folders, broken = resolve(self.source)
        splits: dict[str, Any] = {}
        for split, paths in folders.items():
            rows = []
            for path in paths:
                try:
                    task = TerminalTask.from_dir(path)
                except TaskFormatError as exc:
                    broken[path.name] = str(exc)
                    continue
                rows.append(
                    {
                        "id": task.id,
                        "path": str(task.path),
                        "instruction": task.instruction,
                        "category": task.category,
                        "difficulty": task.difficulty,
                        "image": task.image is not None,
                    }
                )
            splits[split] = Rows(rows)
        self.broken = broken
        if splits and "train" not in splits:
            self._default_split = next(iter(splits))
        return splits or {"train": Rows([])}
