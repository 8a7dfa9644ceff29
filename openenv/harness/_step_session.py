"""``StepEnvSessionAdapter``: a reset/step/state env client seen as a ``ResourceSession``.

The env is reset when the session is made; each tool call becomes one ``step`` with
the action ``action_builder`` makes from the call. Builders passed in shape the
prompt, each tool result and the final verify; the defaults forward the env's reward
and ``done`` untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._exceptions import SessionClosed
from .._models import StepResult
from ._session import ResourceSession
from ._types import RESERVED_TOOL_NAMES, Message, Tool, ToolResult, VerifyResult

__all__ = ["StepEnvSessionAdapter", "plain_state"]

ActionBuilder = Callable[[str, dict[str, Any]], Any]
InitialMessagesBuilder = Callable[[StepResult[Any], Any], list[Message]]
ToolResultBuilder = Callable[[str, dict[str, Any], StepResult[Any], Any], ToolResult]
VerifyBuilder = Callable[[list[Message], Any, "StepResult[Any] | None", Any], VerifyResult]


def plain_state(state: Any) -> Any:
    """A state as plain data (pydantic models dumped, anything else as is)."""
    dump = getattr(state, "model_dump", None)
    return dump() if callable(dump) else state


def default_tool_result(
    name: str, arguments: dict[str, Any], result: StepResult[Any], state: Any
) -> ToolResult:
    """The step's observation, reward and ``done``; the reward and state also in ``metadata``."""
    data = {
        "tool_name": name,
        "arguments": dict(arguments),
        "observation": result.observation,
        "reward": result.reward,
        "done": result.done,
    }
    return ToolResult(
        data=data, done=bool(result.done), metadata={"reward": result.reward, "state": plain_state(state)}
    )


def default_verify(
    transcript: list[Message], final_state: Any, last: StepResult[Any] | None, state: Any
) -> VerifyResult:
    """The last step's reward and ``done`` (none and False before any step); the step count."""
    metrics: dict[str, Any] = {}
    count = state.get("step_count") if isinstance(state, dict) else getattr(state, "step_count", None)
    if count is not None:
        metrics["step_count"] = count
    return VerifyResult(
        env_reward=None if last is None else last.reward,
        done=False if last is None else bool(last.done),
        metrics=metrics,
        artifacts={"final_state": plain_state(state), "transcript_length": len(transcript)},
    )


class StepEnvSessionAdapter(ResourceSession):
    """Wraps an env client (sync, or async with ``.sync()``) as one rollout's session."""

    def __init__(
        self,
        client: Any,
        *,
        task: Any = None,
        seed: int | None = None,
        episode_id: str | None = None,
        tool_specs: list[Tool],
        action_builder: ActionBuilder,
        initial_messages_builder: InitialMessagesBuilder,
        tool_result_builder: ToolResultBuilder | None = None,
        verify_builder: VerifyBuilder | None = None,
        reset_kwargs: dict[str, Any] | None = None,
    ) -> None:
        reserved = sorted({t.name for t in tool_specs} & RESERVED_TOOL_NAMES)
        if reserved:
            raise ValueError(f"Tool names are reserved for the env's own operations: {', '.join(reserved)}")
        sync = getattr(client, "sync", None)
        self._client = sync() if callable(sync) else client
        self._task = task
        self._tools = {t.name: t for t in tool_specs}
        self._action_builder = action_builder
        self._initial_messages_builder = initial_messages_builder
        self._tool_result_builder = tool_result_builder or default_tool_result
        self._verify_builder = verify_builder or default_verify
        self._closed = False
        self._last_result: StepResult[Any] | None = None
        kwargs = dict(reset_kwargs or {})
        if seed is not None:
            kwargs.setdefault("seed", seed)
        if episode_id is not None:
            kwargs.setdefault("episode_id", episode_id)
        try:
            self._initial_result: StepResult[Any] = self._client.reset(**kwargs)
            self._last_state = self._read_state()
        except BaseException:
            self.close()
            raise

    def _read_state(self) -> Any:
        state = getattr(self._client, "state", None)
        return state() if callable(state) else None

    def initial_messages(self) -> list[Message]:
        return list(self._initial_messages_builder(self._initial_result, self._task))

    def list_tools(self) -> list[Tool]:
        return list(self._tools.values())

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """One env step; ``KeyError`` for a reserved or unknown tool name (as upstream)."""
        if name in RESERVED_TOOL_NAMES:
            raise KeyError(f"Reserved orchestration tool: {name}")
        if name not in self._tools:
            raise KeyError(f"Unknown tool: {name}")
        if self._closed:
            raise SessionClosed("the harness session is closed")
        result = self._client.step(self._action_builder(name, dict(arguments)))
        self._last_result, self._last_state = result, self._read_state()
        return self._tool_result_builder(name, dict(arguments), result, self._last_state)

    def verify(self, transcript: list[Message], final_state: Any | None = None) -> VerifyResult:
        return self._verify_builder(list(transcript), final_state, self._last_result, self._last_state)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        close = getattr(self._client, "close", None)
        if callable(close):
            close()
