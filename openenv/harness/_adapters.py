"""Harness drivers: ``MCPHarnessAdapter`` runs the tool-calling loop itself (white box,
the trainer samples each turn); ``CLIHarnessAdapter`` hands the session to an opaque
agent through an MCP bridge (black box, evaluation only)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from ._bridge import SessionMCPBridge
from ._session import ResourceSession
from ._types import (
    HarnessRolloutResult,
    HarnessRunLimits,
    ModelStep,
    ModelStepResult,
    RolloutEvent,
    ToolTraceEntry,
    message_content,
)

__all__ = ["CLIHarnessAdapter", "HarnessAdapter", "MCPHarnessAdapter"]

CLIRunner = Callable[[SessionMCPBridge, ResourceSession, HarnessRunLimits], HarnessRolloutResult]


class HarnessAdapter(ABC):
    """Drives one whole rollout against a session."""

    @abstractmethod
    def run_white_box(
        self, model_step: ModelStep, session: ResourceSession, limits: HarnessRunLimits | None = None
    ) -> HarnessRolloutResult:
        """A rollout where the caller samples every model turn (``model_step``)."""

    @abstractmethod
    def run_black_box(
        self, session: ResourceSession, limits: HarnessRunLimits | None = None
    ) -> HarnessRolloutResult:
        """A rollout where an opaque agent samples its own turns."""


def _model_event(turn: int, step: ModelStepResult) -> RolloutEvent:
    calls = [{"id": c.id, "name": c.name, "arguments": dict(c.args)} for c in step.response.tool_calls]
    return RolloutEvent(
        "model_response", {"turn": turn, "content": step.response.content, "tool_calls": calls}
    )


class MCPHarnessAdapter(HarnessAdapter):
    """The ReAct loop: sample a turn, run its tool calls, feed the results back; until the
    model calls no tool, a tool result says ``done``, or a limit is reached."""

    def run_white_box(
        self, model_step: ModelStep, session: ResourceSession, limits: HarnessRunLimits | None = None
    ) -> HarnessRolloutResult:
        limits = limits or HarnessRunLimits()
        tools = session.list_tools()
        out = HarnessRolloutResult(messages=list(session.initial_messages()))
        calls_made = 0
        for turn in range(limits.max_turns):
            step = model_step(list(out.messages), tools, dict(limits.sampling))
            out.messages.append(step.response.to_message_dict())
            out.prompt_ids.extend(step.prompt_ids)
            out.completion_ids.extend(step.completion_ids)
            out.logprobs.extend(step.logprobs)
            out.events.append(_model_event(turn, step))
            if not step.response.tool_calls:
                out.done = True
                break
            for call in step.response.tool_calls[: limits.max_tool_calls_per_turn]:
                if limits.max_total_tool_calls is not None and calls_made >= limits.max_total_tool_calls:
                    out.metrics["truncated"] = True
                    break
                result = session.call_tool(call.name, dict(call.args))
                calls_made += 1
                out.tool_trace.append(ToolTraceEntry(call.name, dict(call.args), result))
                out.events.append(
                    RolloutEvent(
                        "tool_call",
                        {"tool_name": call.name, "arguments": dict(call.args), "done": result.done},
                    )
                )
                out.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "name": call.name,
                        "content": message_content(result),
                    }
                )
                if result.done:
                    out.done = True
                    break
            if out.done or out.metrics.get("truncated"):
                break
        out.metrics.setdefault("turns", sum(e.type == "model_response" for e in out.events))
        out.metrics.setdefault("tool_calls", len(out.tool_trace))
        return out

    def run_black_box(
        self, session: ResourceSession, limits: HarnessRunLimits | None = None
    ) -> HarnessRolloutResult:
        raise NotImplementedError(
            "MCPHarnessAdapter samples through model_step: use run_white_box "
            "(CLIHarnessAdapter runs opaque agents)"
        )


class CLIHarnessAdapter(HarnessAdapter):
    """An opaque agent (``runner``) that reaches the session's tools through a ``SessionMCPBridge``."""

    def __init__(self, runner: CLIRunner) -> None:
        self._runner = runner

    def run_white_box(
        self, model_step: ModelStep, session: ResourceSession, limits: HarnessRunLimits | None = None
    ) -> HarnessRolloutResult:
        raise NotImplementedError("CLIHarnessAdapter runs opaque agents only: use run_black_box")

    def run_black_box(
        self, session: ResourceSession, limits: HarnessRunLimits | None = None
    ) -> HarnessRolloutResult:
        return self._runner(SessionMCPBridge(session), session, limits or HarnessRunLimits())
