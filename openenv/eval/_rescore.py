"""Recompute a run's rewards with a rubric, without sampling again.

The rubric (an ``openenv.rewards`` rubric or ``fn(action, observation) -> float``,
named ``MODULE:NAME``, or an LLM judge named ``judge:PROVIDER:MODEL?OPTIONS``, see
``openenv.rewards.judge_from_spec``) is called on each turn's action and the
observation that came back, as an env wrapped ``with_rubric`` would have; the
episode's reward is the sum. Actions and observations are given as objects whose
attributes are their fields. An async rubric (the judge) scores the episodes
concurrently on one event loop, each with its own clone; each judged turn keeps the
judge's record (reply, parsed score, cache hit) as ``turn.judge``. Nothing is written
until every episode is scored, so a judge that fails (a refused key) leaves no folder
behind to clash with the next try.
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

from .._aio import run_sync
from .._exceptions import EvalError
from ._metrics import PassRule
from ._runner import RUN_FILE, write_results
from ._trajectory import FILE, Trajectory, TrajectoryWriter, Turn, load_trajectories


def judgements(rubric: Any) -> dict[str, Any]:
    from ..rewards import judgements as of

    return of(rubric)


def _load(spec: str) -> Any:
    if spec.startswith("judge:"):
        from ..rewards import judge_from_spec

        try:
            return judge_from_spec(spec[len("judge:") :])
        except ValueError as exc:
            raise EvalError(f"--rubric {spec.partition('?')[0]!r}: {exc}") from None
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
        out = run_sync(out)
    return float(out)


def _steps(t: Trajectory) -> list[tuple[Turn, SimpleNamespace, SimpleNamespace]]:
    out = []
    for i, turn in enumerate(t.turns):
        if turn.action is None:
            continue
        after = t.turns[i + 1].observation if i + 1 < len(t.turns) else t.final_observation
        done = turn.terminated or turn.truncated
        out.append((turn, _obj(turn.action), _obj(after, done=done, reward=turn.reward)))
    return out


def _finish(new: Trajectory, rubric: Any, total: float) -> Trajectory:
    new.reward = total
    children = getattr(rubric, "named_rubrics", None)
    if callable(children):
        new.reward_breakdown = {name: r.last_score for name, r in children() if r.last_score is not None}
    return new


def rescore_trajectory(t: Trajectory, rubric: Any) -> Trajectory:
    """``t`` with each turn's reward, and the total, from ``rubric``."""
    if t.status == "error":
        return t
    reset = getattr(rubric, "reset_self", None)
    if callable(reset):
        reset()
    new = t.model_copy(deep=True)
    total = 0.0
    for turn, action, observation in _steps(new):
        turn.reward = _score(rubric, action, observation)
        if judged := judgements(rubric):
            turn.judge = judged  # type: ignore[attr-defined]  # Turn allows extra fields
        total += turn.reward
    return _finish(new, rubric, total)


async def rescore_trajectory_async(t: Trajectory, rubric: Any) -> Trajectory:
    """``rescore_trajectory`` on an event loop with a clone of ``rubric`` (``acall``)."""
    if t.status == "error":
        return t
    rubric = rubric.clone()
    rubric.reset()
    new = t.model_copy(deep=True)
    total = 0.0
    for turn, action, observation in _steps(new):
        turn.reward = float(await rubric.acall(action, observation))
        if judged := judgements(rubric):
            turn.judge = judged  # type: ignore[attr-defined]
        total += turn.reward
    return _finish(new, rubric, total)


async def _rescore_all(trajectories: list[Trajectory], rubric: Any) -> list[Trajectory]:
    try:  # every episode runs to its end (no request is cut off), then the first error is raised
        done = await asyncio.gather(
            *(rescore_trajectory_async(t, rubric) for t in trajectories), return_exceptions=True
        )
    finally:
        for r in [rubric, *(child for _, child in rubric.named_rubrics())]:
            close = getattr(r, "aclose", None)
            if callable(close):
                await close()
    for item in done:
        if isinstance(item, BaseException):
            raise item
    return [t for t in done if isinstance(t, Trajectory)]


def rescore(run_dir: str | Path, rubric_spec: str, out: str | Path, pass_rule: PassRule) -> dict[str, Any]:
    """Write ``out``: the run of ``run_dir`` with rewards from ``rubric_spec``."""
    source, target = Path(run_dir), Path(out)
    trajectories = load_trajectories(source)
    rubric = _load(rubric_spec)
    if target.exists() and (target / FILE).exists():
        raise EvalError(f"{target} already holds trajectories: choose another --out")
    if getattr(rubric, "is_async", False) and callable(getattr(rubric, "clone", None)):
        rescored = asyncio.run(_rescore_all(trajectories, rubric))  # the judge's bound applies
    else:
        rescored = [rescore_trajectory(t, rubric) for t in trajectories]
    target.mkdir(parents=True, exist_ok=True)
    if (source / RUN_FILE).is_file():
        record = json.loads((source / RUN_FILE).read_text())
        record["rescored_with"] = rubric_spec
        (target / RUN_FILE).write_text(json.dumps(record, indent=2))
    writer = TrajectoryWriter(target / FILE)
    try:
        for t in rescored:
            writer.write(t)
    finally:
        writer.close()
    shutil.copymode(source / FILE, target / FILE)
    return write_results(target, pass_rule)
