"""``CountEnv``: a text env (RFC 0002) the ``tiny`` model can learn in a few dozen steps.

Each round shows a digit ``d`` as the prompt; the answer should start with the next
digit ``(d + 1) % 10``. Reward per round: 1 for the right digit, 0.1 for another digit,
0 otherwise; the metadata carries the breakdown. ``rounds`` rounds per episode (the
env's reply to one answer is the next round's prompt); the task is a function of the
reset seed only.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pydantic import Field

from openenv import Action, Environment, EnvModels, Execution, Observation, State


class CountAction(Action):
    message: str = Field(max_length=1000)


class CountObservation(Observation):
    prompt: str = ""


class CountEnv(Environment[CountAction, CountObservation, State]):
    """Say the digit after the one shown."""

    execution = Execution.INLINE
    rounds: ClassVar[int] = 1

    def __init__(self) -> None:
        self._state = State()
        self._digits: list[int] = []

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None
    ) -> CountObservation:
        rng = random.Random(seed)
        self._digits = [rng.randrange(10) for _ in range(self.rounds)]
        self._state = State(episode_id=episode_id)
        return CountObservation(prompt=str(self._digits[0]))

    def step(self, action: CountAction) -> CountObservation:
        turn = self._state.step_count
        self._state.step_count += 1
        target = str((self._digits[turn] + 1) % 10)
        head = action.message[:1]
        exact = head == target
        reward = 1.0 if exact else 0.1 if head.isdigit() else 0.0
        done = self._state.step_count >= self.rounds
        prompt = "" if done else str(self._digits[turn + 1])
        return CountObservation(
            prompt=prompt,
            reward=reward,
            done=done,
            metadata={"exact": float(exact), "digit": float(head.isdigit())},
        )

    def state(self) -> State:
        return self._state


class CountEnv2(CountEnv):
    """Two rounds per episode."""

    rounds: ClassVar[int] = 2


MODELS = EnvModels(CountAction, CountObservation, State)
