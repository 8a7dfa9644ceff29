"""Harbor rollouts on this env: what ``openenv.harbor`` (upstream's names) calls.

- The Task API of a served env, read as upstream's ``HarborEnv`` returns it
  (``splits``, ``num_tasks``, ``task_ref``, ``task_refs``).
- ``run_rollout``: one task played by one of our policies (``oracle``, ``openai``, a
  ``module:Class``...) through ``openenv eval`` against the served env; the result in
  the shape of upstream's ``HarborRolloutResult`` (``rollout_result`` converts one
  ``openenv.eval.Trajectory``). The reward and its named parts are the env's verifier's.
- ``training_trace``: a ``train`` rollout (every agent turn with prompt ids, sampled ids
  and a logprob each) as our capture's ``TrainingTrace``; else ``NotTrainable``.
- ATIF: ``load_atif`` (a Harbor trial's ``agent/trajectory.json``), ``write_atif`` (an
  eval trajectory, by ``openenv.eval.to_atif``) and ``merge_into_atif`` (a capture
  session's sampled ids and logprobs put on the ATIF agent steps they belong to, when
  the counts agree step by step; the document is returned unchanged otherwise).
"""

from __future__ import annotations

import copy
import json
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from openenv.capture import NotTrainable, TrainingTrace, TrainingTurn
from openenv.eval import EvalConfig, Trajectory, load_trajectories, run_eval_async, to_atif


def _call(base_url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base_url.rstrip("/") + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as reply:
        return json.loads(reply.read())


def _name(base_url: str) -> str:
    return str(_call(base_url, "/list_environments")[0])


def splits(base_url: str) -> list[dict[str, Any]]:
    """The served env's splits, each with its task count."""
    name = _name(base_url)
    out = []
    for entry in _call(base_url, f"/{name}/splits"):
        count = _call(base_url, f"/{name}/num_tasks", {"split": entry["name"]})["num_tasks"]
        out.append({**entry, "num_tasks": count})
    return out


def num_tasks(base_url: str, split: str = "") -> int:
    name = _name(base_url)
    return int(_call(base_url, f"/{name}/num_tasks", {"split": split or _first(base_url, name)})["num_tasks"])


def _first(base_url: str, name: str) -> str:
    return str(_call(base_url, f"/{name}/splits")[0]["name"])


def _ref(task: dict[str, Any], dataset: str) -> dict[str, Any]:
    data = task.get("data") or {}
    return {
        "index": task.get("index", 0),
        "task_id": str(task["id"]),
        "task_name": str(task["id"]),
        "dataset": dataset,
        "instruction": str(data.get("instruction", "")),
    }


def task_ref(base_url: str, split: str, index: int) -> dict[str, Any]:
    """One task as upstream's ``HarborTaskRef`` (a dict)."""
    name = _name(base_url)
    split = split or _first(base_url, name)
    return _ref(_call(base_url, f"/{name}/task", {"split": split, "index": index})["task"], split)


def task_refs(base_url: str, split: str, start: int = 0, stop: int = 20) -> list[dict[str, Any]]:
    name = _name(base_url)
    split = split or _first(base_url, name)
    rows = _call(base_url, f"/{name}/task_range", {"split": split, "start": start, "stop": stop})["tasks"]
    return [_ref(t, split) for t in rows]


def _rewards(t: Trajectory) -> dict[str, float]:
    named = t.reward_breakdown.get("rewards")
    if isinstance(named, dict) and named:
        return {str(k): float(v) for k, v in named.items()}
    return {"reward": t.reward}


def _turn(i: int, turn: Any) -> dict[str, Any]:
    extra = turn.model_extra or {}
    completion = list(turn.token_ids or [])
    prompt = list(extra.get("prompt_token_ids") or [])
    return {
        "turn": i,
        "prompt_token_ids": prompt,
        "completion_token_ids": completion,
        "per_token_logps": list(turn.logprobs or []),
        "loss_mask": [0] * len(prompt) + [1] * len(completion),
        "node_id": f"turn-{i}",
        "n_tools": len(turn.tool_calls),
        "text": next(
            (str(m.get("content") or "") for m in turn.messages[::-1] if m.get("role") == "assistant"), ""
        ),
        "tool_calls": list(turn.tool_calls),
        "request_messages": [m for m in turn.messages if m.get("role") != "assistant"],
    }


def rollout_result(
    t: Trajectory, *, dataset: str = "", harness: str = "", sandbox: str = ""
) -> dict[str, Any]:
    """One eval trajectory in the shape of upstream's ``HarborRolloutResult``."""
    turns = [_turn(i, turn) for i, turn in enumerate(t.turns) if turn.action is not None or turn.tool_calls]
    train = bool(turns) and all(
        x["prompt_token_ids"]
        and x["completion_token_ids"]
        and len(x["per_token_logps"]) == len(x["completion_token_ids"])
        for x in turns
    )
    ok = t.status in ("done", "truncated")
    return {
        "task_id": t.task_id,
        "task_name": t.task_id,
        "dataset": dataset or (t.split or ""),
        "harness": harness or t.policy,
        "sandbox": sandbox or str(t.reward_breakdown.get("level", "")),
        "trial_name": f"{t.task_id}__{t.run_id}",
        "session_id": t.run_id,
        "reward": t.reward if ok else None,
        "rewards": _rewards(t) if ok else {},
        "reward_key": "reward",
        "rollout_type": "train" if train else "eval",
        "capture_level": "tokens" if train else "none",
        "turns": turns,
        "n_turns": len(turns),
        "n_roots": 1 if turns else 0,
        "n_trainable_tokens": sum(len(x["completion_token_ids"]) for x in turns) if train else 0,
        "multi_turn": len(turns) > 1,
        "atif": "openenv-eval",
        "wall_s": t.wall_s,
        "phase_timings": {"policy_s": t.policy_s, "env_s": t.env_s},
        "ok": ok,
        "error": t.error,
        "exception_type": None if ok else t.status,
    }


async def run_rollout(
    base_url: str,
    *,
    split: str = "",
    task_index: int = 0,
    harness: str = "oracle",
    max_turns: int = 30,
    agent_timeout_sec: float = 0.0,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Play task ``task_index`` of ``split`` on the env at ``base_url`` with the policy
    ``harness`` (``openenv eval``'s policies); upstream's ``HarborRolloutResult`` shape.
    ``out`` keeps the eval run folder (trajectory, results); else it is removed."""
    ref = task_ref(base_url, split, task_index)
    with tempfile.TemporaryDirectory(prefix="openenv-rollout-") as tmp:
        folder = Path(out) if out is not None else Path(tmp)
        config = EvalConfig(
            env=base_url,
            policy=harness,
            out=folder,
            split=ref["dataset"],
            ids=[ref["task_id"]],
            max_turns=max_turns,
            episode_timeout_s=agent_timeout_sec or 600.0,
            retries=0,
        )
        await run_eval_async(config)
        (trajectory,) = load_trajectories(folder)
    return rollout_result(trajectory, dataset=ref["dataset"], harness=harness)


def training_trace(result: dict[str, Any]) -> TrainingTrace:
    """A ``train`` rollout's agent turns as a ``TrainingTrace``; ``NotTrainable`` else."""
    if result.get("rollout_type") != "train":
        raise NotTrainable(
            f"rollout {result.get('trial_name')!r} is {result.get('rollout_type')!r}: its turns carry no "
            "prompt ids, sampled ids and logprobs to train on"
        )
    return TrainingTrace(
        turns=[
            TrainingTurn(
                node_id=t["node_id"] or f"turn-{t['turn']}",
                prompt_token_ids=list(t["prompt_token_ids"]),
                completion_token_ids=list(t["completion_token_ids"]),
                per_token_logps=[float(x) for x in t["per_token_logps"]],
                loss_mask=list(t["loss_mask"]),
                request={"messages": t.get("request_messages") or [], "tools": t.get("request_tools")},
                response={"choices": [{"message": {"role": "assistant", "content": t.get("text", "")}}]},
                metadata={"turn": t["turn"]},
            )
            for t in result.get("turns", [])
            if t.get("role", "agent") == "agent" and not t.get("discarded") and t["completion_token_ids"]
        ]
    )


def load_atif(trial_dir: str | Path) -> dict[str, Any] | None:
    """A Harbor trial's ``agent/trajectory.json`` (None when absent or not JSON)."""
    path = Path(trial_dir) / "agent" / "trajectory.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def write_atif(trajectory: Trajectory, path: str | Path) -> Path:
    """One eval trajectory written as an ATIF document at ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(to_atif(trajectory), indent=2))
    return out


def merge_into_atif(atif: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """``atif`` with each agent step's ``metrics`` given the sampled ids and logprobs of
    the capture call it was (a copy); ``atif`` itself when the steps and the captured
    agent calls do not line up one to one with the same completion lengths."""
    agent = {r["root_id"] for r in document.get("sequences", []) if r.get("role") == "agent"}
    calls = [t for t in document.get("turns", []) if t.get("root_id") in agent]
    steps = [s for s in atif.get("steps") or [] if s.get("source") == "agent"]
    lengths = [int((s.get("metrics") or {}).get("completion_tokens", -1)) for s in steps]
    if not calls or len(calls) != len(steps) or [c["n_sampled"] for c in calls] != lengths:
        return atif
    sampled: dict[str, tuple[list[int], list[float]]] = {}
    for row in document["sequences"]:
        if row.get("role") != "agent":
            continue
        if len(row["node_ids"]) != len(row["turn_lengths"]) or len(row["logprobs"]) != len(row["input_ids"]):
            return atif  # the calls cannot be told apart in this row: nothing is guessed
        picked = [
            (tok, lp)
            for tok, m, lp in zip(row["input_ids"], row["loss_mask"], row["logprobs"], strict=True)
            if m
        ]
        at = 0
        for node, n in zip(row["node_ids"], row["turn_lengths"], strict=True):
            sampled[node] = ([tok for tok, _ in picked[at : at + n]], [lp for _, lp in picked[at : at + n]])
            at += n
    merged = copy.deepcopy(atif)
    for call, step in zip(calls, [s for s in merged["steps"] if s.get("source") == "agent"], strict=True):
        metrics = step.setdefault("metrics", {})
        if call.get("discarded"):
            metrics["discarded"] = True
        elif call["node_id"] in sampled:
            metrics["completion_token_ids"], metrics["logprobs"] = sampled[call["node_id"]]
    merged.setdefault("extra", {})["capture"] = {
        "session_id": document.get("session_id"),
        "n_trainable_tokens": (document.get("stats") or {}).get("n_trainable_tokens", 0),
    }
    return merged
