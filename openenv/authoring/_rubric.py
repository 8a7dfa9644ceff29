"""``runtime.rubric_introspectable`` and ``runtime.reward_attribution``, for an env that
declares ``capabilities.rubric_tree`` (else the manifest declares them N/A).

The wire protocol publishes no rubric, so the env is loaded as ``openenv serve FOLDER``
loads it, in a child Python whose working folder is the env's: one instance, its
``rubric`` (an ``openenv.rewards.Rubric``, which ``openenv.core.rubrics`` is too) walked
for its named parts, then one seeded episode stepped in-process with the run's first
action. The reward is attributable when the observation's reward is the rubric's own
last score and the parts it scored are named (``Rubric.breakdown``).

    python -m openenv.authoring._rubric FOLDER ACTION_JSON   (the child; prints JSON)
"""

from __future__ import annotations

import inspect
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from .._aio import run_sync
from ._policy import CheckStatus
from ._vreport import Results

_FIX_TREE = (
    "give the env a `rubric` (an openenv.rewards.Rubric with named children), or declare rubric_tree: false"
)
_FIX_REWARD = (
    "set each step's reward to the rubric's score: observation.reward = self.rubric(action, observation)"
)


def _await(value: Any) -> Any:
    return run_sync(value) if inspect.isawaitable(value) else value


def _child(folder: str, action_json: str) -> dict[str, Any]:
    """In the child: the env's rubric tree, and one step's reward against its scores."""
    from ..server._serve import load_env_class, resolve_target

    spec, path = resolve_target(folder)
    cls = load_env_class(spec, path)
    env = cls()
    rubric = getattr(env, "rubric", None)
    out: dict[str, Any] = {"env": f"{cls.__module__}.{cls.__qualname__}", "rubric": None}
    if rubric is None or not hasattr(rubric, "named_rubrics"):
        out["rubric"] = None if rubric is None else type(rubric).__name__
        return out
    out["rubric"] = type(rubric).__name__
    out["parts"] = [name for name, _ in rubric.named_rubrics()]
    model = getattr(cls, "action_model", None)
    data = json.loads(action_json)
    action = model.model_validate(data) if model is not None else data
    _await(env.reset(seed=0))
    observation = _await(env.step(action))
    reward = getattr(observation, "reward", None)
    out["reward"] = reward if isinstance(reward, int | float) else None
    out["rubric_score"] = rubric.last_score
    out["breakdown"] = rubric.breakdown()
    with_close = getattr(env, "close", None)
    if callable(with_close):
        _await(with_close())
    return out


def _probe(folder: Path, action: dict[str, Any], timeout_s: float) -> dict[str, Any] | str:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "openenv.authoring._rubric", str(folder), json.dumps(action)],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return f"loading the env and stepping it took over {timeout_s:g} s"
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"loading the env in-process failed: {tail[:300]}"
    parsed = json.loads(lines[-1])
    return parsed if isinstance(parsed, dict) else f"unexpected output: {lines[-1][:200]}"


def run_rubric(
    folder: Path | None, action: dict[str, Any], results: Results, timeout_s: float = 60.0
) -> None:
    """Both ids, for an env folder that declares ``rubric_tree``."""
    if folder is None:
        for check_id in ("runtime.rubric_introspectable", "runtime.reward_attribution"):
            results.add(
                check_id, CheckStatus.SKIP, "a server given by URL: its rubric cannot be loaded from here"
            )
        return
    found = _probe(folder, action, timeout_s)
    if isinstance(found, str):
        for check_id in ("runtime.rubric_introspectable", "runtime.reward_attribution"):
            results.add(check_id, CheckStatus.FAIL, found, remediation=_FIX_TREE)
        return
    parts = found.get("parts") or []
    tree_ok = found.get("rubric") is not None and "parts" in found and bool(parts)
    results.add(
        "runtime.rubric_introspectable",
        CheckStatus.PASS if tree_ok else CheckStatus.FAIL,
        f"{found['env']}.rubric: {found['rubric']} with parts {', '.join(parts)}"
        if tree_ok
        else f"{found['env']}: rubric_tree is declared, but its rubric is "
        + ("missing" if found.get("rubric") is None else f"a {found['rubric']} with no named parts"),
        remediation=_FIX_TREE,
        measured={"parts": parts},
    )
    if not tree_ok:
        results.add(
            "runtime.reward_attribution", CheckStatus.SKIP, "unmet dependency: runtime.rubric_introspectable"
        )
        return
    reward, score, breakdown = found.get("reward"), found.get("rubric_score"), found.get("breakdown") or {}
    problems = []
    if score is None:
        problems.append("the rubric scored nothing on a step: the step's reward does not come from it")
    elif reward is None or not math.isclose(float(reward), float(score), rel_tol=1e-9, abs_tol=1e-12):
        problems.append(f"the step's reward {reward!r} is not the rubric's score {score!r}")
    if score is not None and not breakdown:
        problems.append("the rubric's score names none of its parts (Rubric.breakdown is empty)")
    results.add(
        "runtime.reward_attribution",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [f"reward {reward} = the rubric's score; its parts: {json.dumps(breakdown)[:300]}"],
        remediation=_FIX_REWARD,
        measured={"reward": reward, "rubric_score": score, "breakdown": breakdown},
    )


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], sys.argv[2]), default=str))
