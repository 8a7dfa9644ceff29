"""One trajectory schema: what an episode did, one JSON line per episode.

``trajectories.jsonl`` in a run folder holds one ``Trajectory`` a line, appended (and
flushed) as each episode ends, so a killed run loses nothing that finished. A line cut
by a kill mid-write is skipped on reading. ``load_dataset(dir)`` gives the lines as a
``datasets.Dataset``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from .._exceptions import EvalError

FILE = "trajectories.jsonl"
Status = Literal["done", "truncated", "error", "timeout"]


class Turn(BaseModel):
    """One step: what the policy was shown and said, the action, what the env answered."""

    model_config = ConfigDict(extra="allow")

    index: int
    observation: dict[str, Any]
    messages: list[dict[str, Any]] = Field(default_factory=list)
    action: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False
    policy_s: float = 0.0
    env_s: float = 0.0
    parse_error: dict[str, Any] | None = None
    """A reply that did not parse, or an action the env refused: ``{"reason", "reply"}``
    (and ``"call"``, the tool call as written; ``"action"``, the action refused)."""
    warnings: list[str] = Field(default_factory=list)
    """What the policy had to change to answer (a prompt cut to the model's context)."""


class Trajectory(BaseModel):
    """One episode of one task sample."""

    model_config = ConfigDict(extra="allow")

    run_id: str
    env: str
    env_version: str = ""
    policy: str
    task_id: str
    split: str | None = None
    category: str = ""
    sample: int
    seed: int
    status: Status
    reward: float = 0.0
    reward_breakdown: dict[str, Any] = Field(default_factory=dict)
    success: bool | None = None
    passed: bool = False
    turns: list[Turn] = Field(default_factory=list)
    final_observation: dict[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    parse_failures: int = 0
    warnings: int = 0
    """Turns with a warning (each turn's ``warnings`` says what)."""
    policy_s: float = 0.0
    env_s: float = 0.0
    wall_s: float = 0.0
    attempts: int = 1
    retries: int = 0
    error: str | None = None
    started_at: float = 0.0

    @property
    def key(self) -> tuple[str, int]:
        """The (task id, sample) pair this episode ran."""
        return self.task_id, self.sample

    def to_line(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json")) + b"\n"


class TrajectoryWriter:
    """Appends trajectories to a JSONL file, one line each, written through to the OS at
    once (a killed process loses nothing written); fsynced on ``close`` (a crash of the
    machine itself may lose the last lines of a run that did not close)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        _drop_cut_tail(path)
        self._file = path.open("ab")

    def write(self, trajectory: Trajectory) -> None:
        self._file.write(trajectory.to_line())
        self._file.flush()

    def close(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


def _drop_cut_tail(path: Path) -> None:
    """Cut a last line left without its newline by a killed writer, so the next line
    written does not run into it."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        data = f.read()
        f.truncate(data.rfind(b"\n") + 1)


def iter_trajectories(path: Path) -> Iterator[Trajectory]:
    """The trajectories of a JSONL file; a line cut short (a killed writer) is skipped."""
    if not path.is_file():
        return
    with path.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break  # the tail of a write that was cut off
            try:
                yield Trajectory.model_validate(orjson.loads(line))
            except (orjson.JSONDecodeError, ValueError):
                continue


def load_trajectories(run_dir: str | Path) -> list[Trajectory]:
    """Every trajectory of a run folder (or of a ``.jsonl`` file)."""
    path = Path(run_dir)
    path = path / FILE if path.is_dir() else path
    if not path.is_file():
        raise EvalError(f"no {FILE} in {run_dir}: not a run folder of `openenv eval`")
    return list(iter_trajectories(path))


def load_dataset(run_dir: str | Path) -> Any:
    """The trajectories as a ``datasets.Dataset`` (the ``eval`` extra)."""
    from .._extras import require

    datasets = require("datasets", extra="eval", feature="openenv.eval.load_dataset")
    rows = [_dataset_row(t) for t in load_trajectories(run_dir)]
    return datasets.Dataset.from_list(rows)


def _dataset_row(t: Trajectory) -> dict[str, Any]:
    """A row with a fixed set of columns: nested, free-form parts as JSON text."""
    row = t.model_dump(mode="json", exclude={"turns", "final_observation", "reward_breakdown"})
    row["turns"] = orjson.dumps([turn.model_dump(mode="json") for turn in t.turns]).decode()
    row["final_observation"] = orjson.dumps(t.final_observation).decode()
    row["reward_breakdown"] = orjson.dumps(t.reward_breakdown).decode()
    return row
