"""Exports: the rollout document (``GET /sessions/{id}/rollout``) and ``TrainingTrace``.

``TrainingTrace`` (schema version 1) is upstream's training contract: per agent call the
backend's prompt ids, the sampled ids, one logprob per sampled id and a loss mask over
prompt + completion (0 on the prompt, 1 on sampled ids). Nothing is re-tokenised: every
id is the backend's own. A rollout captured below the ``tokens`` level has no such
contract, and asking for one raises ``NotTrainable`` instead of returning an empty trace.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._errors import NotTrainable
from ._graph import RolloutGraph, TurnNode

if TYPE_CHECKING:
    from ._sessions import Session

AGENT, AUXILIARY, DISCARDED = "agent", "auxiliary", "discarded"


def _check_turn(prompt: list[int], completion: list[int], logps: list[float], mask: list[int]) -> None:
    if not prompt:
        raise ValueError("a training turn needs the backend's prompt token ids")
    if any(t < 0 for t in prompt + completion):
        raise ValueError("token ids must be non-negative")
    if len(logps) != len(completion):
        raise ValueError(f"{len(logps)} logprobs for {len(completion)} completion ids")
    if any(not math.isfinite(lp) or lp > 0 for lp in logps):
        raise ValueError("logprobs must be finite and not positive")
    if len(mask) != len(prompt) + len(completion) or any(m not in (0, 1) for m in mask):
        raise ValueError("loss_mask must be 0/1 over prompt plus completion")
    if any(mask[: len(prompt)]):
        raise ValueError("prompt tokens must stay context (mask 0)")


class TrainingTurn(BaseModel):
    """One backend call: prompt ids, completion ids, their logprobs, a mask over both."""

    model_config = ConfigDict(strict=True, extra="forbid")

    node_id: str = Field(min_length=1)
    prompt_token_ids: list[int]
    completion_token_ids: list[int]
    per_token_logps: list[float]
    loss_mask: list[int]
    request: dict[str, Any] = Field(default_factory=dict)
    response: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _valid(self) -> TrainingTurn:
        _check_turn(self.prompt_token_ids, self.completion_token_ids, self.per_token_logps, self.loss_mask)
        return self


class TrainingTrace(BaseModel):
    """The agent calls of one rollout, each once (schema version 1)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    schema_version: Literal[1] = 1
    turns: list[TrainingTurn]

    @model_validator(mode="after")
    def _unique(self) -> TrainingTrace:
        ids = [t.node_id for t in self.turns]
        if len(set(ids)) != len(ids):
            raise ValueError("training trace contains duplicate node_ids")
        return self


def _roles(graph: RolloutGraph) -> list[tuple[list[TurnNode], str]]:
    """Each path with its role: a dropped retry is discarded; where some calls carry tools,
    the paths that never do (titles, summaries) are auxiliary; the rest is the agent."""
    dropped = {n.node_id for n in graph.discarded_nodes()}
    paths = list(graph.paths())
    tools_seen = any(n.n_tools for n in graph.nodes())
    out = []
    for path in paths:
        if path[-1].node_id in dropped:
            role = DISCARDED
        elif tools_seen and not any(n.n_tools for n in path):
            role = AUXILIARY
        else:
            role = AGENT
        out.append((path, role))
    return out


def export_session(session: Session, *, include_discarded: bool = False) -> dict[str, Any]:
    """The rollout document: every call, every path flattened with its role, the capture level."""
    graph = session.graph
    level = session.capture_level
    trainable_level = level == "tokens"
    rows = []
    for path, role in _roles(graph):
        if role == DISCARDED and not include_discarded:
            continue
        seq = graph.sequence_for(path[-1].node_id)
        ok = trainable_level and role == AGENT and all(n.usable for n in path)
        rows.append(
            {
                "role": role,
                "root_id": seq.root_id,
                "node_ids": seq.node_ids,
                "n_turns": seq.n_turns,
                "prompt_len": seq.prompt_len,
                "n_trainable": seq.n_trainable if ok else 0,
                "turn_lengths": seq.turn_lengths(),
                "input_ids": seq.input_ids,
                "loss_mask": seq.loss_mask if ok else [0] * len(seq.input_ids),
                "logprobs": seq.logprobs,
                "trainable": ok,
                "validation": [],
            }
        )
    dropped = {n.node_id for n in graph.discarded_nodes()}
    turns = [
        {
            "node_id": n.node_id,
            "index": n.index,
            "parent_id": n.parent_id,
            "root_id": graph.root_of(n.node_id),
            "api_type": n.api_type,
            "n_prompt": len(n.prompt_ids),
            "n_sampled": len(n.sampled_ids),
            "n_tools": n.n_tools,
            "finish_reason": n.finish_reason,
            "sampled_logprobs": n.sampled_logprobs,
            "discarded": n.node_id in dropped,
        }
        for n in graph.nodes()
    ]
    good = [r for r in rows if r["trainable"]]
    return {
        "session_id": session.session_id,
        "metadata": session.metadata,
        "turns": turns,
        "stats": {
            **graph.stats(),
            "n_sequences": len(rows),
            "n_trainable_sequences": len(good),
            "n_trainable_tokens": sum(r["n_trainable"] for r in good),
        },
        "sequences": rows,
        "validation": list(session.findings),
        "trainable": bool(good),
        "capture_level": level,
        "rollout_type": "train" if trainable_level else "eval",
        "upstream_errors": session.upstream_errors,
        "incomplete_calls": [
            {k: c.get(k) for k in ("api_type", "error", "prompt_token_ids")}
            | {"sampled_ids": (c.get("choices") or [{}])[0].get("token_ids", [])}
            for c in session.incomplete
        ],
    }


def _agent_nodes(graph: RolloutGraph, document: dict[str, Any]) -> list[TurnNode]:
    if document.get("rollout_type") != "train":
        raise NotTrainable(
            f"rollout {document.get('session_id')} was captured at level "
            f"{document.get('capture_level')!r}: no token ids and logprobs to train on (point the proxy "
            "at a backend that returns them: vLLM, or openenv policy serve)"
        )
    keep = {i for row in document["sequences"] if row["role"] == AGENT for i in row["node_ids"]}
    nodes = [n for n in graph.nodes() if n.node_id in keep]
    bad = [n.node_id for n in nodes if not n.usable]
    if bad:
        raise NotTrainable(f"agent calls without prompt ids or one logprob per sampled id: {', '.join(bad)}")
    return nodes


def to_trace_entries(graph: RolloutGraph, document: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per agent call (upstream's ``TraceEntry`` shape, ``node_id`` in ``metadata``)."""
    return [
        {
            "request": {"messages": n.request_messages, "tools": n.request_tools},
            "response": {"choices": [{"message": n.response_message, "finish_reason": n.finish_reason}]},
            "prompt_token_ids": list(n.prompt_ids),
            "completion_token_ids": list(n.sampled_ids),
            "per_token_logps": [float(x) for x in n.sampled_logprobs or []],
            "loss_mask": [0] * len(n.prompt_ids) + [1] * len(n.sampled_ids),
            "metadata": {"node_id": n.node_id, "index": n.index, "model": n.model, "n_tools": n.n_tools},
        }
        for n in _agent_nodes(graph, document)
    ]


def to_training_trace(graph: RolloutGraph, document: dict[str, Any]) -> TrainingTrace:
    """The rollout's agent calls as a validated ``TrainingTrace``.

    Raises:
        NotTrainable: the rollout was captured below the ``tokens`` level, or an agent call
            lacks prompt ids or a logprob per sampled id.
    """
    return TrainingTrace(
        turns=[
            TrainingTurn(
                node_id=e["metadata"]["node_id"],
                prompt_token_ids=e["prompt_token_ids"],
                completion_token_ids=e["completion_token_ids"],
                per_token_logps=e["per_token_logps"],
                loss_mask=e["loss_mask"],
                request=e["request"],
                response=e["response"],
                metadata=e["metadata"],
            )
            for e in to_trace_entries(graph, document)
        ]
    )


def to_turn_records(
    graph: RolloutGraph, document: dict[str, Any]
) -> list[tuple[list[int], list[int], list[float]]]:
    """``(prompt_ids, completion_ids, logprobs)`` per agent call."""
    return [
        (n.prompt_ids, n.sampled_ids, list(n.sampled_logprobs or [])) for n in _agent_nodes(graph, document)
    ]
