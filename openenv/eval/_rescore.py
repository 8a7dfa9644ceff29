"""Recompute a run's rewards with a rubric, without sampling again.

The rubric (an ``openenv.rewards`` rubric or ``fn(action, observation) -> float``,
named ``MODULE:NAME``) is called on each turn's action and the observation that came
back, as an env wrapped ``with_rubric`` would have; the episode's reward is the sum.
Actions and observations are given as objects whose attributes are their fields.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .._exceptions import EvalError
from ._metrics import PassRule
from ._runner import RUN_FILE, write_results
from ._trajectory import FILE, Trajectory, TrajectoryWriter, load_trajectories


def _load(spec: str) -> Any:
    module_name, _, attr = spec.rpartition(":")
    if not module_name:
        raise EvalError(f"--rubric {spec!r} is not MODULE:NAME")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EvalError(f"cannot import {module_name}: {exc}") from None
    if not hasattr(module, attr):
        raise EvalError(f"{module_name} has no {attr!r}")
    return getattr(module, attr)


def _obj(data: dict[str, Any] | None, **signals: Any) -> SimpleNamespace:
    return SimpleNamespace(**{**(data or {}), **signals})


def _score(rubric: Any, action: Any, observation: Any) -> float:
    out = rubric(action, observation)
    if inspect.isawaitable(out):
        out = asyncio.run(_await(out))
    return float(out)


async def _await(value: Any) -> Any:
    return await value


def rescore_trajectory(t: Trajectory, rubric: Any) -> Trajectory:
    """``t`` with each turn's reward, and the total, from ``rubric``."""
    if t.status == "error":
        return t
    reset = getattr(rubric, "reset_self", None)
    if callable(reset):
        reset()
    new = t.model_copy(deep=True)
    total = 0.0
    for i, turn in enumerate(new.turns):
        if turn.action is None:
            continue
        after = new.turns[i + 1].observation if i + 1 < len(new.turns) else new.final_observation
        done = turn.terminated or turn.truncated
        score = _score(rubric, _obj(turn.action), _obj(after, done=done, reward=turn.reward))
        turn.reward = score
        total += score
    new.reward = total
    children = getattr(rubric, "named_rubrics", None)
    if callable(children):
        new.reward_breakdown = {name: r.last_score for name, r in children() if r.last_score is not None}
    return new


def rescore(run_dir: str | Path, rubric_spec: str, out: str | Path, pass_rule: PassRule) -> dict[str, Any]:
    """Write ``out``: the run of ``run_dir`` with rewards from ``rubric_spec``."""
    source, target = Path(run_dir), Path(out)
    trajectories = load_trajectories(source)
    rubric = _load(rubric_spec)
    if target.exists() and (target / FILE).exists():
        raise EvalError(f"{target} already holds trajectories: choose another --out")
    target.mkdir(parents=True, exist_ok=True)
    if (source / RUN_FILE).is_file():
        record = json.loads((source / RUN_FILE).read_text())
        record["rescored_with"] = rubric_spec
        (target / RUN_FILE).write_text(json.dumps(record, indent=2))
    writer = TrajectoryWriter(target / FILE)
    try:
        for t in trajectories:
            writer.write(rescore_trajectory(t, rubric))
    finally:
        writer.close()
    shutil.copymode(source / FILE, target / FILE)
    return write_results(target, pass_rule)
