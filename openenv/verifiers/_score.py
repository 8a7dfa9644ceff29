"""A verifiers task's prompt as chat messages, and a completion scored by the task itself.

The completion is recorded on a verifiers ``Trace`` as a rollout records a model turn
(the prompt's messages, then the assistant message), and the task's own ``score``
runs on it: its ``@vf.reward`` and ``@vf.metric`` methods, the rewards and metrics its
config plugs in, and its judges. The reward is ``Trace.reward``: the sum of each
reward's score times its weight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ._load import verifiers


@dataclass(frozen=True, slots=True)
class Scored:
    """What a task's scoring recorded: the reward and its parts."""

    reward: float
    rewards: dict[str, dict[str, float] | None]
    metrics: dict[str, float | None]


def prompt_messages(data: Any) -> list[Any]:
    """The task's opening messages as a verifiers rollout sends them: its system prompt
    (if any) first, then its prompt (a string is one user message)."""
    vf = verifiers()
    prompt = data.prompt
    messages = [vf.UserMessage(content=prompt)] if isinstance(prompt, str) else list(prompt or [])
    if data.system_prompt is not None:
        messages.insert(0, vf.SystemMessage(content=data.system_prompt))
    return messages


def as_chat(messages: list[Any]) -> list[dict[str, str]]:
    """Messages as ``{"role", "content"}`` text (images dropped, as verifiers' ``content_text``)."""
    from verifiers.v1.types import content_text  # type: ignore[import-not-found]

    return [{"role": m.role, "content": content_text(getattr(m, "content", None))} for m in messages]


def folded(messages: list[dict[str, str]]) -> str:
    """The messages as one text: their contents, a blank line apart (verifiers folds a
    system prompt into a text prompt the same way)."""
    return "\n\n".join(m["content"] for m in messages if m["content"])


async def score(task: Any, completion: str) -> Scored:
    """Score ``completion`` as the model's one reply to ``task``, by the task's own rewards."""
    vf = verifiers()
    from verifiers.v1.graph import prepare_turn  # type: ignore[import-not-found]
    from verifiers.v1.state import state_cls  # type: ignore[import-not-found]

    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        state=state_cls(type(task))(),
        agent=vf.AgentInfo(config=vf.AgentConfig(), name="openenv", trainable=False),
    )
    reply = vf.Response(
        id="openenv",
        created=int(time.time()),
        model="openenv",
        message=vf.AssistantMessage(content=completion),
        finish_reason="stop",
    )
    prepare_turn(trace, prompt_messages(task.data)).commit(reply)
    await task.score(trace)
    trace.is_completed = trace.ok = True
    rewards = {
        name: None if r is None else {"score": r.score, "weight": r.weight}
        for name, r in trace.rewards.items()
    }
    return Scored(reward=float(trace.reward), rewards=rewards, metrics=dict(trace.metrics))
