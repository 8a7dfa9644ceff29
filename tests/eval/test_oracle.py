"""The oracle scores full marks on every shipped task with a reference solution (the
terminal env's solve.sh, the coding env's reference code, the browser env's scripted
solutions); null stays at the floor on each of those envs; a task without a solution is
an error, never a zero."""

from __future__ import annotations

import os
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
    results = run_eval(  # the arith env ships no reference solution
        EvalConfig(env=str(ROOT / "envs" / "arith_env"), policy="oracle", out=tmp_path, count=2)
    )
    assert results["errors"] == 2
    assert results["scored_tasks"] == 0
    assert results["error_kinds"] == {"NoSolution": 2}
    assert all(
        t.status == "error" and "no reference solution" in (t.error or "")
        for t in load_trajectories(tmp_path)
    )


def _browser_solutions() -> list[str]:
    """The ids of the browser tasks the env package ships a scripted solution for
    (``browser_env.solutions``, what its manifest names as the oracle's plan)."""
    pytest.importorskip("playwright", reason="the browser env needs playwright")
    from browser_env.solutions import SOLUTIONS

    return sorted(SOLUTIONS)


@pytest.fixture(scope="module")
def browser_env():  # type: ignore[no-untyped-def]
    """The browser env served once for the oracle and the null runs (its URL)."""
    from openenv.eval._env import open_env

    pytest.importorskip("playwright", reason="the browser env needs playwright")
    chromium = Path(os.environ.get("OPENENV_BROWSER_CHROMIUM", "/usr/bin/chromium"))
    if not chromium.is_file():
        pytest.skip(f"the browser env needs chromium at {chromium} (scripts/setup.d/60-chromium.sh)")
    with open_env(str(ROOT / "envs" / "browser_env"), max_sessions=8) as env:
        yield env.base_url


def test_oracle_full_marks_on_browser_tasks_with_scripted_solutions(tmp_path: Path, browser_env: str) -> None:
    """The plain ``oracle`` policy: it finds the plan the env's manifest names
    (``validation.capabilities.oracle``) beside the installed ``browser_env`` package."""
    ids = _browser_solutions()
    results = run_eval(
        EvalConfig(env=browser_env, policy="oracle", out=tmp_path, ids=ids, max_turns=8, concurrency=3)
    )
    assert results["errors"] == 0, results["error_kinds"]
    assert results["tasks"] == len(ids) >= 13
    assert [r["task_id"] for r in results["per_task"] if r["mean_reward"] != 1.0] == []


def test_null_stays_at_the_floor_on_browser_tasks(tmp_path: Path, browser_env: str) -> None:
    """The null policy on tasks the oracle solves (six of them: each reset loads a page):
    it stops at once (the browser env has no text action), nothing is clicked or typed,
    no task pays, none errors."""
    ids = _browser_solutions()[:6]
    results = run_eval(
        EvalConfig(env=browser_env, policy="null", out=tmp_path, ids=ids, max_turns=8, concurrency=3)
    )
    assert results["errors"] == 0, results["error_kinds"]
    assert results["tasks"] == results["episodes"] == 6
    assert results["mean_reward"] == 0.0
    assert results["pass_at_k"] == {"1": 0.0}
    trajectories = load_trajectories(tmp_path)
    assert all(t.status == "truncated" and t.reward == 0.0 and not t.passed for t in trajectories)
    assert all([turn.action for turn in t.turns] == [None] for t in trajectories)  # stopped at once
