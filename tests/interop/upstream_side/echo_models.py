"""Echo environment written on *upstream* OpenEnv's public types.

Imported only by scripts that run under the upstream venv (``.venv-upstream``,
``pip install openenv==0.10.0``).  Upstream's import package is also called
``openenv``, so this module must never be imported from our own test process.

Behaviour (kept deliberately tiny and deterministic so that frames can be
compared byte-for-byte with our own server's echo env):

* ``reset()``  -> echoed_message "Echo environment ready!", message_length 0,
  reward 0.0, done False; a new State(episode_id=<given or uuid4>, step_count=0)
* ``step(a)``  -> echoed_message a.message, message_length len(a.message),
  reward len(a.message) * 0.1, done False (never done); step_count += 1
* ``state``    -> upstream ``State`` (episode_id, step_count)
"""

from __future__ import annotations

from typing import Any, Dict, Optional
from uuid import uuid4

import _upstream_guard  # noqa: F401  (must precede any openenv import)
from pydantic import Field

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

RESET_MESSAGE = "Echo environment ready!"


class EchoAction(Action):
    """Action carrying one string to echo back."""

    message: str = Field(..., description="Message to echo back")


class EchoObservation(Observation):
    """Observation with the echoed text and its length."""

    echoed_message: str = Field(default="", description="The echoed message")
    message_length: int = Field(default=0, description="Length of the echoed message")


class EchoEnvironment(Environment):
    """Per-session echo env; safe to run many sessions in one process."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(
        self,
        seed: Optional[int] = None,
        episode_id: Optional[str] = None,
        **kwargs: Any,
    ) -> EchoObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return EchoObservation(
            echoed_message=RESET_MESSAGE, message_length=0, done=False, reward=0.0
        )

    def step(  # type: ignore[override]
        self, action: EchoAction, timeout_s: Optional[float] = None, **kwargs: Any
    ) -> EchoObservation:
        self._state.step_count += 1
        text = action.message
        return EchoObservation(
            echoed_message=text,
            message_length=len(text),
            done=False,
            reward=len(text) * 0.1,
        )

    @property
    def state(self) -> State:
        return self._state


class EchoEnvClient(EnvClient[EchoAction, EchoObservation, State]):
    """Typed upstream client: upstream makes every typed client hand-write these."""

    def _step_payload(self, action: EchoAction) -> Dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: Dict[str, Any]) -> StepResult[EchoObservation]:
        obs = payload.get("observation", {}) or {}
        observation = EchoObservation(
            echoed_message=obs.get("echoed_message", ""),
            message_length=obs.get("message_length", 0),
            metadata=obs.get("metadata", {}) or {},
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=payload.get("done", False),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: Dict[str, Any]) -> State:
        return State(**payload)
