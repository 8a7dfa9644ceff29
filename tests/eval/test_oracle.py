"""The oracle scores full marks on every shipped task with a reference solution (the
terminal env's solve.sh, the coding env's reference code); null stays at the floor;
a task without a solution is an error, never a zero."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv.eval import EvalConfig, load_trajectories, run_eval

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.mark.parametrize(("env", "tasks"), [("terminal_env", 30), ("coding_env", 54)])
def test_oracle_full_marks_on_every_task(tmp_path: Path, env: str, tasks: int) -> None:
    results = run_eval(
        EvalConfig(env=str(ROOT / "envs" / env), policy="oracle", out=tmp_path, concurrency=3, max_turns=3)
    )
    assert results["tasks"] == tasks
    assert results["errors"] == 0, results["error_kinds"]
    assert [r["task_id"] for r in results["per_task"] if r["mean_reward"] != 1.0] == []
    assert results["pass_at_k"] == {"1": 1.0}
    trajectories = load_trajectories(tmp_path)
    assert all(t.status == "done" for t in trajectories)
    categories = {t.category or "-" for t in trajectories}
    assert set(results["per_category"]) == categories  # terminal: files, git, ...; coding: none given
    assert sum(c["tasks"] for c in results["per_category"].values()) == tasks


@pytest.mark.parametrize("env", ["terminal_env", "coding_env"])
def test_null_stays_at_the_floor(tmp_path: Path, env: str) -> None:
    results = run_eval(
        EvalConfig(
            env=str(ROOT / "envs" / env),
            policy="null",
            out=tmp_path,
            count=6,
            samples=2,
            concurrency=3,
            max_turns=2,
        )
    )
    assert results["episodes"] == 12
    assert results["errors"] == 0
    assert results["mean_reward"] == 0.0
    assert results["pass_at_k"] == {"1": 0.0, "2": 0.0}


def test_a_task_without_a_solution_is_an_error_not_a_zero(tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(env=str(ROOT / "envs" / "echo_env"), policy="oracle", out=tmp_path, count=2)
    )
    assert results["errors"] == 2
    assert results["scored_tasks"] == 0
    assert results["error_kinds"] == {"NoSolution": 2}
    assert all(
        t.status == "error" and "no reference solution" in (t.error or "")
        for t in load_trajectories(tmp_path)
    )
