"""The echo environment: behaviour only."""

from __future__ import annotations

import uuid
from typing import Any

from openenv import Environment, Execution

from .models import EchoAction, EchoObservation, EchoState


class EchoEnv(Environment[EchoAction, EchoObservation, EchoState]):
    """Echoes each message back; reward is 0.1 per character.

    Reset options: ``max_steps`` (int) ends the episode as truncated after that many
    steps. Sending the message ``"exit"`` ends it as terminated.
    """

    env_name = "echo_env"
    env_version = "0.1.0"
    execution = Execution.INLINE  # every call is a few microseconds: stay on the loop

    def __init__(self) -> None:
        self._state = EchoState()
        self._max_steps: int | None = None

    def reset(
        self,
        *,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> EchoObservation:
        max_steps = (options or {}).get("max_steps")
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise ValueError("max_steps must be a positive integer")
        self._max_steps = max_steps
        self._state = EchoState(episode_id=episode_id or uuid.uuid4().hex)
        return EchoObservation(echoed_message="Echo environment ready!", reward=0.0)

    def step(self, action: EchoAction) -> EchoObservation:
        self._state.step_count += 1
        self._state.total_chars += len(action.message)
        truncated = self._max_steps is not None and self._state.step_count >= self._max_steps
        return EchoObservation(
            echoed_message=action.message,
            message_length=len(action.message),
            reward=len(action.message) * 0.1,
            done=truncated or action.message == "exit",
            truncated=truncated,
        )

    def state(self) -> EchoState:
        return self._state.model_copy()
