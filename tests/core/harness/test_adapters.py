"""``MCPHarnessAdapter`` (the white-box tool loop) and ``CLIHarnessAdapter`` (an opaque agent)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openenv.core.harness import (
    CLIHarnessAdapter,
    HarnessRolloutResult,
    HarnessRunLimits,
    MCPHarnessAdapter,
    ModelStepResult,
    SessionMCPBridge,
)
from openenv.core.llm_client import LLMResponse, ToolCall

from ._game import GameClient, game_session, guesses


def test_the_loop_runs_tools_until_the_env_says_done() -> None:
    client = GameClient(secret=4)
    step = guesses(1, 4, ids=([1, 2], [3], [-0.5]))
    out = MCPHarnessAdapter().run_white_box(step, game_session(client), HarnessRunLimits(sampling={"t": 1}))
    assert out.done is True
    assert [m["role"] for m in out.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert out.messages[1]["tool_calls"][0]["function"] == {
        "name": "guess",
        "arguments": json.dumps({"n": 1}),
    }
    assert out.messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "guess",
        "content": out.messages[2]["content"],
    }
    assert json.loads(out.messages[2]["content"])["reward"] == 0.0
    assert [(e.tool_name, e.arguments, e.result.done) for e in out.tool_trace] == [
        ("guess", {"n": 1}, False),
        ("guess", {"n": 4}, True),
    ]
    assert [e.type for e in out.events] == ["model_response", "tool_call"] * 2
    assert out.events[0].payload["tool_calls"] == [{"id": "c1", "name": "guess", "arguments": {"n": 1}}]
    assert (out.prompt_ids, out.completion_ids, out.logprobs) == ([1, 2, 1, 2], [3, 3], [-0.5, -0.5])
    assert out.metrics == {"turns": 2, "tool_calls": 2}
    # the model saw the transcript so far, each turn, and the sampling options
    assert [len(m) for m in step.calls] == [1, 3]


def test_a_reply_without_tool_calls_ends_the_rollout() -> None:
    def talk(messages: Any, tools: Any, sampling: Any) -> ModelStepResult:
        return ModelStepResult(response=LLMResponse(content="I give up"))

    out = MCPHarnessAdapter().run_white_box(talk, game_session(GameClient()))
    assert out.done is True
    assert out.messages[-1] == {"role": "assistant", "content": "I give up"}
    assert out.tool_trace == []
    assert out.metrics == {"turns": 1, "tool_calls": 0}


def test_max_turns_bounds_the_rollout() -> None:
    client = GameClient(secret=9)
    out = MCPHarnessAdapter().run_white_box(guesses(0), game_session(client), HarnessRunLimits(max_turns=3))
    assert out.done is False
    assert len(client.steps) == 3
    assert out.metrics == {"turns": 3, "tool_calls": 3}


def _many_calls(n: int) -> Any:
    def step(messages: Any, tools: Any, sampling: Any) -> ModelStepResult:
        calls = [ToolCall(id=f"x{i}", name="guess", args={"n": 0}) for i in range(n)]
        return ModelStepResult(response=LLMResponse(content="", tool_calls=calls))

    return step


def test_tool_call_limits_per_turn_and_in_total() -> None:
    client = GameClient(secret=9)
    limits = HarnessRunLimits(max_turns=5, max_tool_calls_per_turn=2)
    MCPHarnessAdapter().run_white_box(_many_calls(3), game_session(client), limits)
    assert len(client.steps) == 10

    client = GameClient(secret=9)
    limits = HarnessRunLimits(max_turns=5, max_total_tool_calls=4)
    out = MCPHarnessAdapter().run_white_box(_many_calls(3), game_session(client), limits)
    assert len(client.steps) == 4
    assert out.metrics["truncated"] is True
    assert out.done is False


def test_an_unknown_tool_fails_the_rollout() -> None:
    def bad(messages: Any, tools: Any, sampling: Any) -> ModelStepResult:
        call = ToolCall(id="1", name="shout", args={})
        return ModelStepResult(response=LLMResponse(content="", tool_calls=[call]))

    with pytest.raises(KeyError, match="Unknown tool"):
        MCPHarnessAdapter().run_white_box(bad, game_session(GameClient()))


def test_each_adapter_refuses_the_other_mode() -> None:
    with pytest.raises(NotImplementedError):
        MCPHarnessAdapter().run_black_box(game_session(GameClient()))
    cli = CLIHarnessAdapter(lambda bridge, session, limits: HarnessRolloutResult())
    with pytest.raises(NotImplementedError):
        cli.run_white_box(guesses(1), game_session(GameClient()))


def test_the_cli_runner_reaches_the_tools_through_the_bridge() -> None:
    seen: list[Any] = []

    def agent(bridge: SessionMCPBridge, session: Any, limits: HarnessRunLimits) -> HarnessRolloutResult:
        seen.append(limits.max_turns)
        reply = bridge.handle_request(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "guess", "arguments": {"n": 2}},
            }
        )
        return HarnessRolloutResult(done=reply["result"]["done"])

    client = GameClient(secret=2)
    out = CLIHarnessAdapter(agent).run_black_box(game_session(client))
    assert out.done is True
    assert seen == [HarnessRunLimits().max_turns]
    assert len(client.steps) == 1
