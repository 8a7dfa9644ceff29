"""``build_model_step``: any model client with tool calling as a harness ``ModelStep``."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Coroutine
from typing import Any, Protocol

from ..._aio import LoopThread
from .._types import Message, ModelStep, ModelStepResult, Tool

__all__ = ["build_model_step"]


class ToolCallingClient(Protocol):
    """What ``build_model_step`` needs of a model client (upstream's ``LLMClient`` has it)."""

    def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any
    ) -> Coroutine[Any, Any, Any]: ...


#: The sampling options passed on to ``complete_with_tools``; others are dropped with a warning.
SAMPLING_KEYS = frozenset({"max_tokens", "temperature", "top_p"})


def build_model_step(llm_client: ToolCallingClient, *, system_prompt: str | None = None) -> ModelStep:
    """A ``ModelStep`` that asks ``llm_client.complete_with_tools`` for each turn.

    ``system_prompt`` is put first when the transcript has no system message. Every
    call of the step runs on one event loop in one thread of its own, stopped when the
    step is dropped.
    """
    # A harness calls its model step synchronously, maybe from inside a running loop (an
    # async test, a notebook), and async clients tie their connection pool to the loop of
    # their first request: so every call goes to one loop of its own, never the caller's.
    worker = LoopThread("openenv-model-step")

    def model_step(messages: list[Message], tools: list[Tool], sampling: dict[str, Any]) -> ModelStepResult:
        chat = list(messages)
        if system_prompt and not any(m.get("role") == "system" for m in chat):
            chat.insert(0, {"role": "system", "content": system_prompt})
        dropped = sorted(set(sampling) - SAMPLING_KEYS)
        if dropped:
            warnings.warn(
                f"Dropping unsupported sampling keys: {', '.join(dropped)}", RuntimeWarning, stacklevel=2
            )
        tool_dicts = [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools
        ]
        options = {k: v for k, v in sampling.items() if k in SAMPLING_KEYS}
        reply = worker.run(llm_client.complete_with_tools(messages=chat, tools=tool_dicts, **options))
        return ModelStepResult(response=reply)

    weakref.finalize(model_step, worker.close)
    return model_step
