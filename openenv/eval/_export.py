"""A run's trajectories in other tools' formats: Harbor's ATIF and upstream's collect.

``to_atif(t)`` is one episode as an Agent Trajectory Interchange Format document
(Harbor's ``harbor.models.trajectories.Trajectory``, ``ATIF-v1.6``): a ``user`` step with
the first observation, then one ``agent`` step per turn whose ``observation`` is what
the env answered; token ids and logprobs go in the step's ``metrics``, the reward, the
action and the judge's record (after ``rescore``) in its ``extra``.

``to_upstream(t)`` is one line of the ``results.jsonl`` upstream OpenEnv 0.10's
``openenv collect`` writes (its ``EpisodeRecord``: ``episode_id``, ``messages``,
``reward``, ``done``, ``tool_trace``, ``metrics``, ``verify_metrics``, ``artifacts``,
``task``, ``extra``), with ``metadata.json`` beside it.

``export(dir, fmt, out)`` writes a run folder as ``out/trajectories/<id>.json`` (ATIF,
one document each) or ``out/results.jsonl`` + ``out/metadata.json`` (upstream).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._exceptions import EvalError
from .._version import __version__
from ._runner import RUN_FILE
from ._trajectory import Trajectory, Turn, load_trajectories

FORMATS = ("atif", "upstream")
ATIF_VERSION = "ATIF-v1.6"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _role_text(messages: list[dict[str, Any]], roles: tuple[str, ...]) -> str | None:
    parts = [_text(m.get("content") or "") for m in messages if m.get("role") in roles]
    return "\n".join(parts) if parts else None


def _after(t: Trajectory, i: int) -> dict[str, Any] | None:
    return t.turns[i + 1].observation if i + 1 < len(t.turns) else t.final_observation


def _episode_id(t: Trajectory) -> str:
    return f"{t.task_id}-s{t.sample}"


def _stamp(t: Trajectory, offset_s: float = 0.0) -> str | None:
    if not t.started_at:
        return None
    return datetime.fromtimestamp(t.started_at + offset_s, UTC).isoformat()


def _calls(turn: Turn, step: int) -> list[dict[str, Any]]:
    return [
        {
            "tool_call_id": call.get("id") or f"call_{step}_{n}",
            "function_name": str(call.get("name", "")),
            "arguments": call.get("arguments") if isinstance(call.get("arguments"), dict) else {},
        }
        for n, call in enumerate(turn.tool_calls)
    ]


def _agent_step(t: Trajectory, i: int, turn: Turn, step_id: int, elapsed: float) -> dict[str, Any]:
    calls = _calls(turn, step_id)
    said = _role_text(turn.messages, ("assistant",))
    step: dict[str, Any] = {
        "step_id": step_id,
        "source": "agent",
        "model_name": t.policy,
        "message": said if said is not None else _text(turn.action),
    }
    if (stamp := _stamp(t, elapsed)) is not None:
        step["timestamp"] = stamp
    if calls:
        step["tool_calls"] = calls
    after = _after(t, i)
    if after is not None:
        source = calls[0]["tool_call_id"] if calls else None
        step["observation"] = {"results": [{"source_call_id": source, "content": _text(after)}]}
    if turn.token_ids is not None or turn.logprobs is not None:
        step["metrics"] = {"completion_token_ids": turn.token_ids, "logprobs": turn.logprobs}
    extra = {
        "action": turn.action,
        "reward": turn.reward,
        "terminated": turn.terminated,
        "truncated": turn.truncated,
        "policy_s": turn.policy_s,
        "env_s": turn.env_s,
    }
    judge = (turn.model_extra or {}).get("judge")
    if judge is not None:
        extra["judge"] = judge
    step["extra"] = extra
    return step


def to_atif(t: Trajectory) -> dict[str, Any]:
    """One episode as an ATIF document (a dict; Harbor's model validates it)."""
    first = t.turns[0].observation if t.turns else t.final_observation
    shown = _role_text(t.turns[0].messages, ("system", "user")) if t.turns else None
    steps: list[dict[str, Any]] = [
        {"step_id": 1, "source": "user", "message": shown if shown is not None else _text(first or {})}
    ]
    if (stamp := _stamp(t)) is not None:
        steps[0]["timestamp"] = stamp
    elapsed = 0.0
    for i, turn in enumerate(t.turns):
        elapsed += turn.policy_s + turn.env_s
        if turn.action is not None or turn.tool_calls:
            steps.append(_agent_step(t, i, turn, len(steps) + 1, elapsed))
    return {
        "schema_version": ATIF_VERSION,
        "session_id": t.run_id,
        "trajectory_id": _episode_id(t),
        "agent": {"name": "openenv-eval", "version": __version__, "model_name": t.policy},
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": t.prompt_tokens,
            "total_completion_tokens": t.completion_tokens,
            "total_steps": len(steps),
            "extra": {"reward": t.reward, "passed": t.passed, "success": t.success},
        },
        "extra": {
            "env": t.env,
            "env_version": t.env_version,
            "task_id": t.task_id,
            "split": t.split,
            "category": t.category,
            "sample": t.sample,
            "seed": t.seed,
            "status": t.status,
            "error": t.error,
            "reward_breakdown": t.reward_breakdown,
        },
    }


def _messages(t: Trajectory) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in t.turns:
        if turn.messages:
            out.extend(dict(m) for m in turn.messages)
        else:
            out.append({"role": "user", "content": _text(turn.observation)})
            if turn.action is not None:
                out.append({"role": "assistant", "content": _text(turn.action)})
    return out


def to_upstream(t: Trajectory) -> dict[str, Any]:
    """One episode as upstream ``openenv collect``'s ``EpisodeRecord`` (a dict)."""
    trace = []
    for i, turn in enumerate(t.turns):
        if turn.action is None:
            continue
        after = _after(t, i) or {}
        call = turn.tool_calls[0] if turn.tool_calls else {}
        trace.append(
            {
                "tool_name": call.get("name", "step"),
                "arguments": call.get("arguments", turn.action),
                "result": {
                    "data": after,
                    "done": turn.terminated or turn.truncated,
                    "metadata": after.get("metadata", {}) if isinstance(after, dict) else {},
                    "error": None,
                },
            }
        )
    return {
        "episode_id": _episode_id(t),
        "messages": _messages(t),
        "reward": t.reward,
        "done": t.status in ("done", "truncated"),
        "tool_trace": trace,
        "metrics": {
            "turns": len(t.turns),
            "prompt_tokens": t.prompt_tokens,
            "completion_tokens": t.completion_tokens,
            "policy_s": t.policy_s,
            "env_s": t.env_s,
            "wall_s": t.wall_s,
        },
        "verify_metrics": {"passed": t.passed, "success": t.success, "reward_breakdown": t.reward_breakdown},
        "artifacts": {},
        "task": t.task_id,
        "extra": {
            "run_id": t.run_id,
            "env": t.env,
            "policy": t.policy,
            "split": t.split,
            "sample": t.sample,
            "seed": t.seed,
            "status": t.status,
            "error": t.error,
        },
    }


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def export(run_dir: str | Path, fmt: str, out: str | Path) -> list[Path]:
    """Write the run of ``run_dir`` in ``fmt`` (``atif`` or ``upstream``) under ``out``;
    returns the files written."""
    if fmt not in FORMATS:
        raise EvalError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    source, target = Path(run_dir), Path(out)
    trajectories = load_trajectories(source)
    written: list[Path] = []
    if fmt == "atif":
        folder = target / "trajectories"
        folder.mkdir(parents=True, exist_ok=True)
        for t in trajectories:
            path = folder / f"{_safe(_episode_id(t))}.json"
            path.write_text(json.dumps(to_atif(t), indent=2, default=str))
            written.append(path)
        return written
    target.mkdir(parents=True, exist_ok=True)
    results = target / "results.jsonl"
    results.write_text("".join(json.dumps(to_upstream(t), default=str) + "\n" for t in trajectories))
    run = json.loads((source / RUN_FILE).read_text()) if (source / RUN_FILE).is_file() else {}
    first = trajectories[0] if trajectories else None
    metadata = {
        "env": run.get("env", first.env if first else None),
        "env_base_url": None,
        "provider": str(run.get("policy", first.policy if first else "")).partition(":")[0] or None,
        "model": run.get("policy", first.policy if first else None),
        "llm_endpoint": None,
        "llm_port": None,
        "num_episodes_requested": len(trajectories),
        "temperature": None,
        "keep_losses": True,
        "exported_from": str(source),
    }
    (target / "metadata.json").write_text(json.dumps(metadata, indent=2, default=str))
    return [results, target / "metadata.json"]
