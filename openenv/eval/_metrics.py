"""The figures of a run: pass@k, avg@k, mean reward with a bootstrap interval, per task
and per category, tokens and time.

* pass@k: the unbiased estimator of Chen et al. (2021), per task
  ``1 - C(n - c, k) / C(n, k)`` with ``n`` samples of which ``c`` passed, averaged over
  the tasks with at least ``k`` samples.
* avg@k: the mean reward of each task's first ``k`` samples (by sample number),
  averaged over tasks.
* the mean reward's 95% interval: a percentile bootstrap over tasks (each resample
  draws tasks with replacement and averages their mean rewards), seeded (numpy's
  generator when numpy is installed, else ``random``'s).

Episodes that errored count nowhere but in ``errors``: an error is never a zero.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._trajectory import Trajectory


@dataclass(frozen=True)
class PassRule:
    """What counts as a pass: the env's success flag when it gives one (``use_success``),
    else a reward of at least ``threshold`` (default: full reward, 1.0)."""

    threshold: float = 1.0
    use_success: bool = True

    def passed(self, reward: float, success: bool | None) -> bool:
        if self.use_success and success is not None:
            return success
        return reward >= self.threshold - 1e-9


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k for ``n`` samples with ``c`` passes (Chen et al. 2021)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k / i): stable, no huge binomials
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def bootstrap_ci(values: Sequence[float], *, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap 95% interval of the mean of ``values``."""
    if not values:
        return (math.nan, math.nan)
    if len(values) == 1:
        return (values[0], values[0])
    n = len(values)
    try:
        import numpy as np  # with the eval extra (datasets brings it): ~100x faster
    except ImportError:
        rng = random.Random(seed)
        means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    else:
        picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
        means = sorted(np.asarray(values, dtype=float)[picks].mean(axis=1).tolist())
    return means[int(0.025 * (resamples - 1))], means[math.ceil(0.975 * (resamples - 1))]


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else math.nan


def _task_rows(trajectories: Iterable[Trajectory]) -> list[dict[str, Any]]:
    by_task: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        by_task.setdefault(t.task_id, []).append(t)
    rows = []
    for task_id, items in sorted(by_task.items()):
        items.sort(key=lambda t: t.sample)
        ok = [t for t in items if t.status != "error"]
        n, c = len(ok), sum(t.passed for t in ok)
        rows.append(
            {
                "task_id": task_id,
                "category": items[0].category,
                "samples": n,
                "passed": c,
                "errors": len(items) - n,
                "parse_failures": sum(map(_parse_failures, items)),
                "mean_reward": _mean(t.reward for t in ok),
                "rewards": [t.reward for t in ok],
                "pass_at_k": {str(k): pass_at_k(n, c, k) for k in range(1, n + 1)},
                "avg_at_k": {str(k): _mean(t.reward for t in ok[:k]) for k in range(1, n + 1)},
                "wall_s": sum(t.wall_s for t in items),
            }
        )
    return rows


def _aggregate(rows: list[dict[str, Any]], k_max: int, seed: int) -> dict[str, Any]:
    scored = [r for r in rows if r["samples"]]
    means = [r["mean_reward"] for r in scored]
    lo, hi = bootstrap_ci(means, seed=seed)
    return {
        "tasks": len(rows),
        "scored_tasks": len(scored),
        "mean_reward": _mean(means),
        "reward_ci95": [lo, hi],
        "pass_at_k": {
            str(k): _mean(r["pass_at_k"][str(k)] for r in scored if r["samples"] >= k)
            for k in range(1, k_max + 1)
        },
        "avg_at_k": {
            str(k): _mean(r["avg_at_k"][str(k)] for r in scored if r["samples"] >= k)
            for k in range(1, k_max + 1)
        },
    }


def summarize(trajectories: Sequence[Trajectory], *, seed: int = 0) -> dict[str, Any]:
    """The results of a run (what ``results.json`` holds); a figure with nothing to
    average (no scored task) is None."""
    rows = _task_rows(trajectories)
    k_max = max((r["samples"] for r in rows), default=0)
    errors = [t for t in trajectories if t.status == "error"]
    overall = _aggregate(rows, k_max, seed)
    categories = {}
    for name in sorted({r["category"] for r in rows}):
        inside = [r for r in rows if r["category"] == name]
        categories[name or "-"] = _aggregate(inside, max(r["samples"] for r in inside), seed)
    first = trajectories[0] if trajectories else None
    summary: dict[str, Any] = finite(
        {
            "env": first.env if first else "",
            "env_version": first.env_version if first else "",
            "policy": first.policy if first else "",
            "run_id": first.run_id if first else "",
            "episodes": len(trajectories),
            "errors": len(errors),
            "error_kinds": _error_kinds(errors),
            "retries": sum(t.retries for t in trajectories),
            "timeouts": sum(t.status == "timeout" for t in trajectories),
            "parse_failures": sum(map(_parse_failures, trajectories)),
            "episodes_with_parse_failures": sum(_parse_failures(t) > 0 for t in trajectories),
            "warnings": sum(_warnings(t) for t in trajectories),
            "k": k_max,
            **overall,
            "passed_episodes": sum(t.passed for t in trajectories),
            "prompt_tokens": sum(t.prompt_tokens for t in trajectories),
            "completion_tokens": sum(t.completion_tokens for t in trajectories),
            "policy_s": sum(t.policy_s for t in trajectories),
            "env_s": sum(t.env_s for t in trajectories),
            "episode_wall_s": sum(t.wall_s for t in trajectories),
            "rewards": [t.reward for t in trajectories if t.status != "error"],
            "per_task": rows,
            "per_category": categories,
        }
    )
    return summary


def _parse_failures(t: Trajectory) -> int:
    """Turns whose reply did not parse or whose action the env refused."""
    return sum(turn.parse_error is not None for turn in t.turns)


def _warnings(t: Trajectory) -> int:
    """Turns with a warning (a prompt cut to the model's context)."""
    return sum(bool(turn.warnings) for turn in t.turns)


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinity as None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def _error_kinds(errors: Sequence[Trajectory]) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for t in errors:
        kind = (t.error or "error").split(":", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds
