"""``build_model_step``: any ``LLMClient`` with tool calling as a harness ``ModelStep``."""

from __future__ import annotations

import asyncio
import warnings
import weakref
from typing import Any

from ...env_server.mcp_types import Tool
from ...llm_client import LLMClient
from .._types import Message, ModelStep, ModelStepResult

__all__ = ["build_model_step"]

#: The sampling options passed on to ``complete_with_tools``; others are dropped with a warning.
SAMPLING_KEYS = frozenset({"max_tokens", "temperature", "top_p"})


def build_model_step(llm_client: LLMClient, *, system_prompt: str | None = None) -> ModelStep:
    """A ``ModelStep`` that asks ``llm_client.complete_with_tools`` for each turn.

    Every call runs on one event loop kept by the step (async clients tie their
    connection pool to the loop of their first request), closed when the step is
    dropped. ``system_prompt`` is put first when the transcript has no system
    message. Call it from synchronous code.
    """
    runner = asyncio.Runner()

    def model_step(messages: list[Message], tools: list[Tool], sampling: dict[str, Any]) -> ModelStepResult:
        chat = list(messages)
        if system_prompt and not any(m.get("role") == "system" for m in chat):
            chat.insert(0, {"role": "system", "content": system_prompt})
        dropped = sorted(set(sampling) - SAMPLING_KEYS)
        if dropped:
            warnings.warn(
                f"sampling options not passed to the model: {', '.join(dropped)}",
                RuntimeWarning,
                stacklevel=2,
            )
        tool_dicts = [
            {"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in tools
        ]
        options = {k: v for k, v in sampling.items() if k in SAMPLING_KEYS}
        response = runner.run(llm_client.complete_with_tools(messages=chat, tools=tool_dicts, **options))
        return ModelStepResult(response=response)

    weakref.finalize(model_step, runner.close)  # the loop goes with the step
    return model_step
