"""Runs in a venv holding verifiers (0.4+) and this package: verifiers' own OpenEnv task
set (``verifiers.v1.tasksets.openenv``) drives an env server at ``argv[1]``, reset with
the JSON object ``argv[2]``, with a SCRIPTED PLAYER (a test double of the model: its
replies are ``argv[3:]``, in order).

Prints one JSON line: the observations the player was shown, the actions it sent, and
the rewards verifiers recorded.
"""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from verifiers.v1.tasksets.openenv import OpenEnvConfig, OpenEnvEnv, OpenEnvTaskset


@dataclass
class ScriptedSegment:
    last_reply: str
    terminated: bool = False


@dataclass
class ScriptedTrace:
    rewards: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None

    def record_reward(self, name: str, value: float, weight: float = 1.0) -> None:
        self.rewards[name] = value

    def stop(self, condition: str, override: bool = False) -> None:
        self.stopped = condition


@dataclass
class ScriptedInteraction:
    """TEST DOUBLE of verifiers' ``Interaction``: each turn answers the next scripted reply."""

    replies: list[str]
    shown: list[Any] = field(default_factory=list)
    trace: ScriptedTrace = field(default_factory=ScriptedTrace)

    async def turn(self, message: str) -> ScriptedSegment:
        self.shown.append(json.loads(message))
        if not self.replies:
            return ScriptedSegment("", terminated=True)
        return ScriptedSegment(self.replies.pop(0))


@dataclass
class ScriptedPlayer:
    """TEST DOUBLE of a verifiers agent whose model replies are scripted."""

    interaction_: ScriptedInteraction

    @asynccontextmanager
    async def interaction(self, task: Any):
        yield self.interaction_


@dataclass
class ScriptedAgents:
    player: ScriptedPlayer


async def main(base_url: str, reset: dict[str, Any], replies: list[str]) -> dict[str, Any]:
    taskset = OpenEnvTaskset(OpenEnvConfig(base_url=base_url, resets=[reset]))
    (task,) = list(taskset.load())
    script = ScriptedInteraction(list(replies))
    # verifiers' own ``OpenEnvEnv.run``, unchanged; the instance skips ``Env.__init__``,
    # which loads a registered taskset by id and a model harness (the player is scripted).
    env = object.__new__(OpenEnvEnv)
    await env.run(task, ScriptedAgents(ScriptedPlayer(script)))
    return {
        "shown": script.shown,
        "unsent": script.replies,
        "rewards": script.trace.rewards,
        "stopped": script.trace.stopped,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]))))
