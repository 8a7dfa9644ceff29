"""STATISTICAL: the env's rewards over many tasks and seeds, from policies that know
nothing (``null``, ``random``) and the reference solutions (``oracle``).

* ``statistical.headroom``: the random policy's reward distribution, per task and
  overall; a task where random play averages above the floor leaves nothing to learn;
* ``statistical.leaky_tasks`` (ours): tasks the null policy passes (doing nothing
  scores above the floor): the task measures nothing;
* ``statistical.variance_bound``: the same actions on the same task under different
  seeds (the null policy's, the reference solution's) get the same reward, within
  ``reward.variance_tolerance`` (0 unless declared);
* ``statistical.reward_reachability``: some reference solution reaches the top of the
  range.

Each task is played ``seeds`` times by each policy (``openenv.eval``: the episode seed,
and the reset seed of a Task API task, differ per sample).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from .._vmanifest import ValidationBlock
from ._checks import Context
from ._play import play
from ._policy import NOT_APPLICABLE, CheckStatus
from ._semantic import NO_SOLUTION, declared_steps
from ._vreport import Results

#: Below this, two float rewards are the same.
EPSILON = 1e-9
HISTOGRAM_BINS = 10


def run_statistical(
    ctx: Context, block: ValidationBlock | None, results: Results, *, tasks: int, seeds: int
) -> None:
    """Play ``tasks`` tasks ``seeds`` times with each policy and add the STATISTICAL
    results (each check says SKIP, with why, when the manifest has no block)."""
    if block is None:
        for check_id in STATISTICAL_IDS:
            results.add(check_id, CheckStatus.SKIP, "unmet dependency: static.manifest (reward range)")
        return
    horizon = declared_steps(ctx)
    turns = horizon + 1 if horizon else 30
    timeout_s = block.resources.episode_timeout_s
    runs = {
        p: play(ctx.url, p, count=tasks, samples=seeds, max_turns=turns, episode_timeout_s=timeout_s, seed=1)
        for p in ("null", "random", "oracle")
    }
    oracle = [t for t in runs["oracle"] if not (t.status == "error" and NO_SOLUTION in str(t.error))]
    _headroom(runs["random"], block, results)
    _leaky(runs["null"], block, results)
    _variance(runs["null"], oracle, block, results)
    _reachability(oracle, block, results)


STATISTICAL_IDS = (
    "statistical.reward_reachability",
    "statistical.headroom",
    "statistical.leaky_tasks",
    "statistical.variance_bound",
)


def _by_task(trajs: list[Any]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = defaultdict(list)
    for t in sorted(trajs, key=lambda t: (t.task_id, t.sample)):
        out[t.task_id].append(float(t.reward))
    return dict(out)


def distribution(rewards: list[float], low: float, high: float) -> dict[str, Any]:
    """Mean, standard deviation, quantiles and a histogram over ``[low, high]``."""
    if not rewards:
        return {"episodes": 0}
    ordered = sorted(rewards)

    def q(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

    bins = [0] * HISTOGRAM_BINS
    width = (high - low) / HISTOGRAM_BINS
    for r in rewards:
        bins[min(HISTOGRAM_BINS - 1, max(0, int((r - low) / width)))] += 1
    return {
        "episodes": len(rewards),
        "mean": statistics.fmean(rewards),
        "std": statistics.pstdev(rewards),
        "min": ordered[0],
        "p50": q(0.5),
        "p90": q(0.9),
        "max": ordered[-1],
        "histogram": bins,
    }


def _headroom(trajs: list[Any], block: ValidationBlock, results: Results) -> None:
    low, high = block.reward.range
    floor = high - block.reward.floor_margin
    per_task = _by_task(trajs)
    overall = distribution([r for rs in per_task.values() for r in rs], low, high)
    if not per_task:
        results.add("statistical.headroom", CheckStatus.SKIP, "the random policy played no episode")
        return
    means = {task: statistics.fmean(rs) for task, rs in per_task.items()}
    easy = [
        f"task {task}: the random policy averaged {m:g} over {len(per_task[task])} seeds "
        f"(the floor is {floor:g})"
        for task, m in means.items()
        if m > floor
    ]
    summary = (
        f"random policy, {len(per_task)} task(s) x {overall['episodes'] // len(per_task)} seed(s): "
        f"mean {overall['mean']:.4g}, sd {overall['std']:.4g}, min {overall['min']:g}, "
        f"p50 {overall['p50']:g}, p90 {overall['p90']:g}, max {overall['max']:g}"
    )
    results.add(
        "statistical.headroom",
        CheckStatus.FAIL if easy else CheckStatus.PASS,
        [*easy, summary] if easy else [summary],
        remediation="random play already scores above the floor on these tasks: there is nothing left to "
        "learn; make the tasks harder or the checks stricter",
        measured={"random": overall, "random_mean_by_task": means, "floor": floor},
    )


def _leaky(trajs: list[Any], block: ValidationBlock, results: Results) -> None:
    floor = block.reward.range[1] - block.reward.floor_margin
    per_task = _by_task(trajs)
    leaky = {task: rs for task, rs in per_task.items() if any(r > floor for r in rs)}
    evidence = [
        f"task {task}: the null policy (no answer, no action) scored {', '.join(f'{r:g}' for r in rs)} "
        f"over {len(rs)} seed(s), above the floor {floor:g}"
        for task, rs in leaky.items()
    ]
    results.add(
        "statistical.leaky_tasks",
        CheckStatus.FAIL if leaky else CheckStatus.PASS,
        evidence or [f"the null policy stayed at or below {floor:g} on {len(per_task)} task(s), every seed"],
        remediation=f"task(s) {', '.join(sorted(leaky))} pass without any work: make each check require the "
        "work the task asks for (an empty answer or no action must not match the expected result)",
        measured={"leaky": sorted(leaky), "tasks": len(per_task), "floor": floor},
    )


def _variance(null: list[Any], oracle: list[Any], block: ValidationBlock, results: Results) -> None:
    tolerance = block.reward.variance_tolerance or 0.0
    spread = []
    worst = 0.0
    for policy, trajs in (("null", null), ("oracle", oracle)):
        for task, rs in _by_task(trajs).items():
            if len(rs) < 2:
                continue
            sd = statistics.pstdev(rs)
            worst = max(worst, sd)
            if sd > tolerance + EPSILON:
                spread.append(
                    f"task {task}: the {policy} policy's same actions scored "
                    f"{', '.join(f'{r:g}' for r in rs)} under {len(rs)} seeds (sd {sd:.4g} > {tolerance:g})"
                )
    if not (null or oracle):
        results.add("statistical.variance_bound", CheckStatus.SKIP, "no episode was played")
        return
    results.add(
        "statistical.variance_bound",
        CheckStatus.FAIL if spread else CheckStatus.PASS,
        spread or [f"the same actions got the same reward under every seed (largest sd {worst:g})"],
        remediation="the reward depends on something other than the actions (a random draw, the clock, "
        "state left by another episode): seed it from reset(seed=...) or declare reward.variance_tolerance "
        "for a judged reward",
        measured={"largest_sd": worst, "tolerance": tolerance},
    )


def _reachability(oracle: list[Any], block: ValidationBlock, results: Results) -> None:
    if not oracle:
        results.add(
            "statistical.reward_reachability",
            CheckStatus.SKIP,
            NOT_APPLICABLE + "no reference solution was played",
        )
        return
    high = block.reward.range[1] - block.reward.oracle_tolerance
    per_task = _by_task(oracle)
    reached = sorted(task for task, rs in per_task.items() if max(rs) >= high)
    results.add(
        "statistical.reward_reachability",
        CheckStatus.PASS if reached else CheckStatus.FAIL,
        f"{len(reached)} of {len(per_task)} task(s) with a reference solution reached {high:g}",
        remediation="make full reward reachable: no reference solution reached the top of the range",
        measured={"reached": len(reached), "tasks": len(per_task)},
    )
