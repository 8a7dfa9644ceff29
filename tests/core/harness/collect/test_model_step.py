"""``build_model_step``: an ``LLMClient`` as the harness's model step."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv.core.harness import MCPHarnessAdapter
from openenv.core.harness.collect import build_model_step
from openenv.core.llm_client import LLMClient, LLMResponse, ToolCall

from .._game import GUESS, GameClient, game_session


class ScriptedLLM(LLMClient):
    """Guesses 0, 1, 2... and records what it was asked, and on which event loop."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1", None)
        self.requests: list[dict[str, Any]] = []
        self.loops: set[int] = set()

    async def complete(self, prompt: str, **kwargs: Any) -> str:
        return ""

    async def complete_with_tools(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **kwargs: Any
    ) -> LLMResponse:
        self.loops.add(id(asyncio.get_running_loop()))
        self.requests.append({"messages": messages, "tools": tools, **kwargs})
        n = len(self.requests) - 1
        return LLMResponse(content="", tool_calls=[ToolCall(id=str(n), name="guess", args={"n": n})])


def test_the_client_drives_a_rollout_on_one_loop() -> None:
    llm = ScriptedLLM()
    step = build_model_step(llm, system_prompt="Be brief.")
    out = MCPHarnessAdapter().run_white_box(step, game_session(GameClient(secret=2)))
    assert out.done is True
    assert len(llm.requests) == 3
    assert len(llm.loops) == 1
    first = llm.requests[0]
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert first["tools"] == [
        {"name": "guess", "description": GUESS.description, "inputSchema": GUESS.input_schema}
    ]


def test_sampling_options_are_filtered_with_a_warning() -> None:
    llm = ScriptedLLM()
    step = build_model_step(llm)
    messages = [{"role": "system", "content": "mine"}, {"role": "user", "content": "go"}]
    with pytest.warns(RuntimeWarning, match="seed"):
        step(messages, [GUESS], {"temperature": 0.5, "seed": 1})
    assert llm.requests[0]["temperature"] == 0.5
    assert "seed" not in llm.requests[0]
    assert llm.requests[0]["messages"] == messages


def test_it_works_when_called_inside_a_running_loop() -> None:
    llm = ScriptedLLM()
    step = build_model_step(llm)

    async def caller() -> Any:
        return step([{"role": "user", "content": "go"}], [GUESS], {})

    first = asyncio.run(caller())
    second = step([{"role": "user", "content": "again"}], [GUESS], {})
    assert [first.response.tool_calls[0].args, second.response.tool_calls[0].args] == [{"n": 0}, {"n": 1}]
    assert len(llm.loops) == 1
