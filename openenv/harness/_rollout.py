"""The env's reward for a finished rollout, and a TRL ``rollout_func`` built from sessions.

Rewards come from the env only: the last reward a tool result carried, which
``verify`` may forward but must not contradict. Nothing here makes up a reward.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ._adapters import HarnessAdapter
from ._session import ResourceSession, ResourceSessionFactory
from ._types import (
    HarnessRolloutResult,
    HarnessRunLimits,
    ModelStep,
    ToolResult,
    VerifyResult,
    final_state_of,
)

__all__ = ["build_harness_rollout_func", "resolve_env_reward"]

RolloutFunc = Callable[[list[Any], Any], dict[str, list[Any]]]


def _reward_of(result: ToolResult) -> float | None:
    reward = result.metadata.get("reward")
    if reward is None and isinstance(result.data, dict):
        reward = result.data.get("reward")
    return None if reward is None else float(reward)


def resolve_env_reward(rollout: HarnessRolloutResult, verify: VerifyResult) -> float:
    """The last reward a tool call returned, else the one ``verify`` forwarded.

    Raises:
        ValueError: ``verify`` reports a reward other than the env's last one, or the
            rollout has no reward at all.
    """
    from_trace = next(
        (r for e in reversed(rollout.tool_trace) if (r := _reward_of(e.result)) is not None), None
    )
    from_verify = None if verify.env_reward is None else float(verify.env_reward)
    if (
        from_trace is not None
        and from_verify is not None
        and not math.isclose(from_trace, from_verify, rel_tol=1e-9, abs_tol=1e-6)
    ):
        raise ValueError(
            "verify.env_reward must forward the environment reward from the rollout "
            f"(verify: {from_verify}, env: {from_trace})"
        )
    if from_trace is not None:
        return from_trace
    if from_verify is not None:
        return from_verify
    raise ValueError("rollout did not produce an environment reward")


def build_harness_rollout_func(
    *,
    session_factory: ResourceSessionFactory[Any],
    harness_adapter: HarnessAdapter,
    model_step_builder: Callable[[Any, ResourceSession], ModelStep],
    limits: HarnessRunLimits | None = None,
    reward_key: str = "env_reward",
) -> RolloutFunc:
    """A ``rollout_func(prompts, trainer)`` for TRL: one white-box rollout per prompt.

    It returns ``prompt_ids``, ``completion_ids``, ``logprobs``, the rewards under
    ``reward_key`` and ``verify_metrics``, one entry per prompt.
    """

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {
            k: [] for k in ("prompt_ids", "completion_ids", "logprobs", reward_key, "verify_metrics")
        }
        for prompt in prompts:
            session = session_factory.create(task=prompt)
            try:
                rollout = harness_adapter.run_white_box(
                    model_step=model_step_builder(trainer, session), session=session, limits=limits
                )
                verify = session.verify(transcript=rollout.messages, final_state=final_state_of(rollout))
                out["prompt_ids"].append(list(rollout.prompt_ids))
                out["completion_ids"].append(list(rollout.completion_ids))
                out["logprobs"].append(list(rollout.logprobs))
                out[reward_key].append(resolve_env_reward(rollout, verify))
                out["verify_metrics"].append(dict(verify.metrics))
            finally:
                session.close()
        return out

    return rollout_func
