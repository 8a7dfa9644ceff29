"""The env's reward for a rollout, and ``build_harness_rollout_func`` (a TRL ``rollout_func``)."""

from __future__ import annotations

from typing import Any

import pytest

from openenv.core.harness import (
    HarnessRolloutResult,
    HarnessRunLimits,
    MCPHarnessAdapter,
    ToolResult,
    ToolTraceEntry,
    VerifyResult,
    _resolve_env_reward,
    build_harness_rollout_func,
    resolve_env_reward,
)

from ._game import GameFactory, guesses


def _rollout(*results: ToolResult) -> HarnessRolloutResult:
    return HarnessRolloutResult(tool_trace=[ToolTraceEntry("t", {}, r) for r in results])


def test_the_last_reward_a_tool_returned_wins() -> None:
    rollout = _rollout(
        ToolResult(metadata={"reward": 0.0}), ToolResult(data={"reward": 0.5}), ToolResult(data="text")
    )
    assert resolve_env_reward(rollout, VerifyResult()) == 0.5
    assert resolve_env_reward(rollout, VerifyResult(env_reward=0.5 + 1e-9)) == 0.5
    assert _resolve_env_reward is resolve_env_reward


def test_verify_reward_is_used_when_no_tool_gave_one() -> None:
    assert resolve_env_reward(_rollout(ToolResult(data="x")), VerifyResult(env_reward=2)) == 2.0


def test_verify_may_not_contradict_the_env() -> None:
    with pytest.raises(ValueError, match="must forward"):
        resolve_env_reward(_rollout(ToolResult(metadata={"reward": 1.0})), VerifyResult(env_reward=0.0))
    with pytest.raises(ValueError, match="did not produce"):
        resolve_env_reward(_rollout(), VerifyResult())


def test_rollout_func_runs_one_rollout_per_prompt_and_closes_each_session() -> None:
    factory = GameFactory()
    built: list[Any] = []

    def builder(trainer: Any, session: Any) -> Any:
        built.append(trainer)
        return guesses(2, 5, ids=([1], [2, 3], [-0.1, -0.2]))

    rollout_func = build_harness_rollout_func(
        session_factory=factory,
        harness_adapter=MCPHarnessAdapter(),
        model_step_builder=builder,
        limits=HarnessRunLimits(max_turns=2),
        reward_key="reward",
    )
    out = rollout_func([5, 7], "trainer")
    assert built == ["trainer", "trainer"]
    assert out["reward"] == [1.0, 0.0]
    assert out["prompt_ids"] == [[1, 1], [1, 1]]
    assert out["completion_ids"] == [[2, 3, 2, 3]] * 2
    assert out["logprobs"] == [[-0.1, -0.2, -0.1, -0.2]] * 2
    assert out["verify_metrics"] == [{"step_count": 2}, {"step_count": 2}]
    assert [c.closed for c in factory.clients] == [1, 1]


def test_rollout_func_closes_the_session_when_the_rollout_fails() -> None:
    factory = GameFactory()

    def builder(trainer: Any, session: Any) -> Any:
        raise RuntimeError("no model")

    rollout_func = build_harness_rollout_func(
        session_factory=factory, harness_adapter=MCPHarnessAdapter(), model_step_builder=builder
    )
    with pytest.raises(RuntimeError, match="no model"):
        rollout_func([1], None)
    assert factory.clients[0].closed == 1
