"""``build_model_step``: any ``LLMClient`` with tool calling as a harness ``ModelStep``."""

from __future__ import annotations

import asyncio
import warnings
import weakref
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...env_server.mcp_types import Tool
from ...llm_client import LLMClient, LLMResponse
from .._types import Message, ModelStep, ModelStepResult

__all__ = ["build_model_step"]

#: The sampling options passed on to ``complete_with_tools``; others are dropped with a warning.
SAMPLING_KEYS = frozenset({"max_tokens", "temperature", "top_p"})


class _LoopWorker:
    """One thread holding one event loop: coroutines run there, callers wait.

    A harness calls its model step synchronously, maybe from inside a running loop
    (an async test, a notebook), and async clients tie their connection pool to the
    loop of their first request: so every call goes to the same loop, never the caller's.
    """

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openenv-model-step")
        self.runner = asyncio.Runner()

    def run(self, coro: Coroutine[Any, Any, LLMResponse]) -> LLMResponse:
        return self.executor.submit(self.runner.run, coro).result()

    @staticmethod
    def stop(executor: ThreadPoolExecutor, runner: asyncio.Runner) -> None:
        try:
            executor.submit(runner.close).result()
        except RuntimeError:  # interpreter shutdown: no new work in the thread
            runner.close()
        executor.shutdown(wait=False)


def build_model_step(llm_client: LLMClient, *, system_prompt: str | None = None) -> ModelStep:
    """A ``ModelStep`` that asks ``llm_client.complete_with_tools`` for each turn.

    ``system_prompt`` is put first when the transcript has no system message. Every
    call of the step runs on one event loop in one thread of its own, stopped when the
    step is dropped.
    """
    worker = _LoopWorker()

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

    weakref.finalize(model_step, _LoopWorker.stop, worker.executor, worker.runner)
    return model_step
