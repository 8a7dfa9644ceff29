"""The data a harness rollout passes around: tool and verify results, the trace, the limits.

Plain dataclasses, as upstream's: envs build them by keyword (``ToolResult(data=...,
done=True, metadata={"reward": 1.0})``) and trainers read their fields.
``to_plain`` helpers turn them into JSON-ready dicts (the shape ``verify`` receives as
``final_state`` and the collect runner writes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

__all__ = [
    "RESERVED_TOOL_NAMES",
    "HarnessRolloutResult",
    "HarnessRunLimits",
    "Message",
    "ModelStep",
    "ModelStepResult",
    "RolloutEvent",
    "Tool",
    "ToolResult",
    "ToolTraceEntry",
    "VerifyResult",
    "final_state_of",
    "message_content",
    "tool_trace_to_plain",
]

#: Tool names an env may not use: they are the env's own operations.
RESERVED_TOOL_NAMES = frozenset({"reset", "step", "state", "close"})


class Tool(BaseModel):
    """One tool as ``list_tools`` reports it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    input_schema: dict[str, Any]


#: One chat message, OpenAI style: ``{"role": ..., "content": ..., ...}``.
Message = dict[str, Any]


@dataclass
class ToolResult:
    """What one tool call gave back: its ``data``, whether the episode ended, extras.

    An env's reward for the call goes in ``metadata["reward"]`` (or ``data["reward"]``).
    """

    data: Any = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_plain(self) -> dict[str, Any]:
        return {"data": self.data, "done": self.done, "metadata": dict(self.metadata), "error": self.error}


@dataclass
class VerifyResult:
    """A finished rollout's outcome. ``env_reward`` forwards the env's own reward (never a new one)."""

    env_reward: float | None = None
    done: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, Any] = field(default_factory=dict)


@dataclass
class RolloutEvent:
    """Something that happened during a rollout (``model_response``, ``tool_call``)."""

    type: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolTraceEntry:
    """One tool call the harness made, with its result."""

    tool_name: str
    arguments: dict[str, Any]
    result: ToolResult

    def to_plain(self) -> dict[str, Any]:
        return {
            "tool_name": self.tool_name,
            "arguments": dict(self.arguments),
            "result": self.result.to_plain(),
        }


@dataclass
class ModelStepResult:
    """One sampled model turn: the reply, and (white-box) its token ids and logprobs."""

    response: Any  # the model client's reply (upstream's ``LLMResponse``: content, tool_calls)
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


@dataclass
class HarnessRolloutResult:
    """A whole rollout: the transcript, the tool calls, the events and the tokens."""

    messages: list[Message] = field(default_factory=list)
    tool_trace: list[ToolTraceEntry] = field(default_factory=list)
    events: list[RolloutEvent] = field(default_factory=list)
    done: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


@dataclass
class HarnessRunLimits:
    """Bounds on one rollout, and the sampling options handed to every model step."""

    max_turns: int = 10
    max_tool_calls_per_turn: int | None = None
    max_total_tool_calls: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)


class ModelStep(Protocol):
    """Samples the next assistant turn from the transcript so far and the tools offered."""

    def __call__(
        self, messages: list[Message], tools: list[Tool], sampling: dict[str, Any]
    ) -> ModelStepResult: ...


def message_content(result: ToolResult) -> str:
    """A tool result as the text of a ``tool`` message (JSON for structured data)."""
    if result.data is None:
        return result.error or ""
    if isinstance(result.data, str):
        return result.data
    return json.dumps(result.data, sort_keys=True, default=str)


def tool_trace_to_plain(rollout: HarnessRolloutResult) -> list[dict[str, Any]]:
    return [entry.to_plain() for entry in rollout.tool_trace]


def final_state_of(rollout: HarnessRolloutResult) -> dict[str, Any]:
    """The ``final_state`` handed to ``session.verify`` after a rollout."""
    return {
        "done": rollout.done,
        "metrics": dict(rollout.metrics),
        "events": [{"type": e.type, "payload": dict(e.payload)} for e in rollout.events],
        "tool_trace": tool_trace_to_plain(rollout),
    }
