"""pass@k against brute-force enumeration; the bootstrap interval; the summary."""

from __future__ import annotations

import itertools
import math

import pytest

from openenv.eval import PassRule, Trajectory, bootstrap_ci, pass_at_k, summarize


def brute_force(n: int, c: int, k: int) -> float:
    """The fraction of the k-subsets of n samples (c of them passing) with a pass."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert math.isclose(pass_at_k(n, c, k), brute_force(n, c, k), abs_tol=1e-12), (n, c, k)


def test_pass_at_k_large_n_is_stable() -> None:
    assert math.isclose(pass_at_k(200, 1, 1), 1 / 200)
    assert math.isclose(pass_at_k(200, 0, 100), 0.0)
    assert pass_at_k(200, 150, 100) == 1.0


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 0), (3, 1, 4), (3, 4, 1), (3, -1, 1)])
def test_pass_at_k_refuses_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass@k"):
        pass_at_k(n, c, k)


def test_bootstrap_interval_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 0.2, 0.5, 0.9, 1.0, 1.0, 0.3]
    lo, hi = bootstrap_ci(values, seed=3)
    assert (lo, hi) == bootstrap_ci(values, seed=3)
    assert lo < sum(values) / len(values) < hi
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert bootstrap_ci([0.7]) == (0.7, 0.7)


def _t(task: str, sample: int, reward: float, *, status: str = "done", category: str = "a") -> Trajectory:
    t = Trajectory(
        run_id="r",
        env="e",
        policy="p",
        task_id=task,
        sample=sample,
        seed=sample,
        status=status,
        reward=reward,
        category=category,
    )
    t.passed = status != "error" and PassRule().passed(reward, None)
    return t


def test_summary_counts_errors_apart_and_splits_by_category() -> None:
    trajectories = [
        _t("t1", 0, 1.0),
        _t("t1", 1, 0.0),
        _t("t1", 2, 1.0),
        _t("t2", 0, 0.0, category="b"),
        _t("t2", 1, 0.5, category="b"),
        _t("t2", 2, 0.0, status="error", category="b"),
    ]
    r = summarize(trajectories)
    assert r["episodes"] == 6
    assert r["errors"] == 1
    assert r["k"] == 3
    rows = {row["task_id"]: row for row in r["per_task"]}
    assert rows["t2"]["samples"] == 2
    assert rows["t2"]["errors"] == 1
    assert rows["t1"]["pass_at_k"]["1"] == pytest.approx(2 / 3)
    assert rows["t1"]["avg_at_k"]["2"] == pytest.approx(0.5)
    assert r["pass_at_k"]["1"] == pytest.approx((2 / 3 + 0) / 2)
    assert r["pass_at_k"]["3"] == pytest.approx(1.0)  # only t1 has 3 scored samples
    assert r["mean_reward"] == pytest.approx((2 / 3 + 0.25) / 2)
    assert set(r["per_category"]) == {"a", "b"}
    assert r["per_category"]["b"]["mean_reward"] == pytest.approx(0.25)


def test_pass_rule_prefers_the_success_flag() -> None:
    rule = PassRule()
    assert rule.passed(0.2, True)
    assert not rule.passed(1.0, False)
    assert rule.passed(1.0, None)
    assert not rule.passed(0.99, None)
    assert PassRule(threshold=0.5).passed(0.5, None)
    assert PassRule(use_success=False).passed(1.0, False)
