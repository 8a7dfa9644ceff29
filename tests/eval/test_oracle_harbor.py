"""The oracle plays a Harbor task's solution as Harbor's oracle agent does (issue 32):
the whole ``solution/`` folder is there (a solve.sh may read its own files), the task's
``[solution] env`` is set, and the run waits up to the task's ``[agent] timeout_sec``;
a folder too big for the env's run action is ``NoSolution``, not a zero.

Sandboxed tasks (no Dockerfile): no Docker needed. Each run serves the terminal env in
this process, on a task folder the test writes."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from openenv.eval import EvalConfig, TaskRef, load_trajectories, run_eval

ROOT = Path(__file__).resolve().parents[2]

SOLVE = """#!/bin/bash
set -e
# a file beside the script, as Harbor ships the whole solution/ folder
cat "$(dirname "$0")/answer.txt" > answer.txt
echo "$SOLVE_WORD" >> answer.txt
"""


def _task(root: Path, answer: str) -> Path:
    """A Harbor task folder: its solve.sh copies ``solution/answer.txt`` and appends the
    ``[solution] env`` variable ``SOLVE_WORD``; the check wants both lines."""
    task = root / "two-file-solution"
    for sub in ("solution", "tests"):
        (task / sub).mkdir(parents=True)
    (task / "instruction.md").write_text("Write answer.txt: the answer, then the word.\n")
    (task / "task.toml").write_text('[agent]\ntimeout_sec = 25\n\n[solution.env]\nSOLVE_WORD = "pelican"\n')
    (task / "solution" / "solve.sh").write_text(SOLVE)
    (task / "solution" / "answer.txt").write_text(answer + "\n")
    (task / "tests" / "checks.toml").write_text(
        f'[[check]]\nname = "both lines"\nrun = "cat answer.txt"\nstdout = "{answer}\\npelican"\n'
    )
    return task


def _run(task: Path, out: Path) -> dict[str, Any]:
    ref = TaskRef(
        id=task.name, data={"path": str(task), "image": False}, reset_options={"task_id": task.name}
    )
    return run_eval(
        EvalConfig(
            env=str(ROOT / "envs" / "terminal_env"),
            policy="oracle",
            out=out,
            tasks=[ref],
            env_kwargs={"tasks_dir": str(task.parent)},
            max_turns=3,
        )
    )


def test_oracle_ships_the_solution_folder_with_its_env_and_timeout(tmp_path: Path) -> None:
    task = _task(tmp_path / "tasks", "forty-two")
    results = _run(task, tmp_path / "out")
    assert results["errors"] == 0, results["error_kinds"]
    assert results["mean_reward"] == 1.0
    (trajectory,) = load_trajectories(tmp_path / "out")
    run = trajectory.turns[0].action
    assert run is not None
    assert run["timeout_s"] == 25.0  # the task's [agent] timeout_sec
    assert trajectory.turns[1].action == {"type": "submit"}


def test_a_solution_folder_over_the_run_actions_bound_is_no_solution(tmp_path: Path) -> None:
    # 800 kB of random bytes: over 1 MiB once packed as base64 in the run command
    task = _task(tmp_path / "tasks", base64.b64encode(os.urandom(800_000)).decode())
    results = _run(task, tmp_path / "out")
    assert results["error_kinds"] == {"NoSolution": 1}
    (trajectory,) = load_trajectories(tmp_path / "out")
    assert "over the 1048576 the env's run action takes" in (trajectory.error or "")
    assert trajectory.turns == []
