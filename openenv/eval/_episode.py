"""One episode: reset, then the policy and the env take turns until the episode ends,
the policy stops, or the turn limit is reached (then it is ``truncated``).

A reply that does not parse is kept on its turn (``parse_error``). The env judges what
it can take: a text env got the raw text (the policy made it the action). A turn with
no action the env can take (no valid tool call on an env without a text field), or
with an action the env refuses as invalid (``VALIDATION_ERROR``: the env's state is
unchanged), is a no-op: no reward, the same observation again, the agent told why
(``Agent.rejected``); it counts towards the turn limit.

Time is split into the policy's (its ``act`` calls) and the env's (reset and steps).
The return is the sum of the step rewards (RFC 0002); the breakdown and any success
flag come from the last observation's ``metadata``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from .._exceptions import ValidationFailed
from ..client import AsyncEnvClient
from ..policy import Decision, Episode, Policy
from ._trajectory import Trajectory, Turn


@dataclass
class EpisodeSpec:
    """What one episode plays: the task, its sample number and seed."""

    run_id: str
    env: str
    env_version: str
    task_id: str
    split: str | None
    category: str
    sample: int
    seed: int
    reset_options: dict[str, Any]
    reset_seed: int


class Clock:
    """Accumulates the policy's and the env's time of one episode."""

    def __init__(self) -> None:
        self.policy_s = 0.0
        self.env_s = 0.0


def _refused(exc: ValidationFailed, decision: Decision) -> dict[str, Any]:
    """The parse failure of an action the env refused (``VALIDATION_ERROR``)."""
    said = decision.messages[-1].get("content") if decision.messages else None
    failure: dict[str, Any] = {"reason": f"the env refused the action: {exc}", "action": decision.action}
    if decision.parse_error is None and isinstance(said, str):
        failure["reply"] = said
    return {**(decision.parse_error or {}), **failure}


def _signals(result: Any) -> tuple[float | None, bool, bool]:
    return result.reward, bool(result.terminated), bool(result.truncated)


async def play(
    client: AsyncEnvClient[Any, Any, Any],
    policy: Policy,
    episode: Episode,
    spec: EpisodeSpec,
    clock: Clock,
) -> Trajectory:
    """Play ``spec`` with ``policy`` on ``client``; errors propagate to the caller."""
    started = time.time()
    t0 = time.perf_counter()
    result = await client.reset(seed=spec.reset_seed, **spec.reset_options)
    clock.env_s += time.perf_counter() - t0
    observation: dict[str, Any] = dict(result.observation)
    actions = episode.actions.for_observation(observation)  # an MCP env's own tools, once listed
    agent = policy.agent(
        episode if actions is episode.actions else dataclasses.replace(episode, actions=actions)
    )
    reward: float | None = None
    turns: list[Turn] = []
    total, status = 0.0, "truncated"
    prompt_tokens = completion_tokens = 0
    for index in range(episode.max_turns):
        t0 = time.perf_counter()
        decision = await agent.act(observation, reward)
        policy_s = time.perf_counter() - t0
        clock.policy_s += policy_s
        prompt_tokens += decision.prompt_tokens
        completion_tokens += decision.completion_tokens
        turn = Turn(
            index=index,
            observation=observation,
            messages=decision.messages,
            action=decision.action,
            tool_calls=decision.tool_calls,
            token_ids=decision.token_ids,
            logprobs=decision.logprobs,
            policy_s=policy_s,
            parse_error=decision.parse_error,
            warnings=decision.warnings,
        )
        turns.append(turn)
        if decision.action is None:
            if decision.parse_error is None:
                break  # the policy stopped: truncated
            agent.rejected(str(decision.parse_error.get("reason", "")))
            reward = None
            continue  # nothing the env can take: a no-op turn, the same observation again
        t0 = time.perf_counter()
        try:
            result = await client.step(decision.action)
        except ValidationFailed as exc:  # the env refused the action: it changed nothing
            turn.env_s = time.perf_counter() - t0
            clock.env_s += turn.env_s
            turn.parse_error = _refused(exc, decision)
            agent.rejected(turn.parse_error["reason"])
            reward = None
            continue
        turn.env_s = time.perf_counter() - t0
        clock.env_s += turn.env_s
        reward, terminated, truncated = _signals(result)
        turn.reward, turn.terminated, turn.truncated = reward, terminated, truncated
        total += reward or 0.0
        observation = dict(result.observation)
        if terminated or truncated:
            status = "done" if terminated else "truncated"
            break
    metadata = observation.get("metadata") or {}
    success = metadata.get("success")
    return Trajectory(
        run_id=spec.run_id,
        env=spec.env,
        env_version=spec.env_version,
        policy=policy.name,
        task_id=spec.task_id,
        split=spec.split,
        category=spec.category,
        sample=spec.sample,
        seed=spec.seed,
        status=status,
        reward=total,
        reward_breakdown=dict(metadata.get("reward_breakdown") or {}),
        success=success if isinstance(success, bool) else None,
        turns=turns,
        final_observation=observation,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        parse_failures=sum(t.parse_error is not None for t in turns),
        warnings=sum(bool(t.warnings) for t in turns),
        policy_s=clock.policy_s,
        env_s=clock.env_s,
        started_at=started,
    )
