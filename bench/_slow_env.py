"""A slow env for the scaling benchmark: each step sleeps ``SLOW_S`` (50 ms) in a thread.

The sleep costs no CPU, so on a 2-core machine several replicas can each be held at
their own limit: ``Execution.THREAD`` runs every step on the server's shared pool of
``thread_workers`` threads, so one replica serves at most ``thread_workers / SLOW_S``
steps/s however many sessions it holds (bench/bench_scale.py sets the pool size).
"""

from __future__ import annotations

import os
import time
from typing import Any

from echo_env import EchoAction, EchoObservation, EchoState

from openenv import Environment, Execution

SLOW_S = float(os.environ.get("OPENENV_BENCH_SLOW_S", "0.05"))


class SlowEnv(Environment[EchoAction, EchoObservation, EchoState]):
    """Echo, after sleeping SLOW_S seconds per step."""

    execution = Execution.THREAD

    def __init__(self) -> None:
        self._state = EchoState()

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None
    ) -> EchoObservation:
        self._state = EchoState(episode_id=episode_id)
        return EchoObservation(echoed_message="ready")

    def step(self, action: EchoAction) -> EchoObservation:
        time.sleep(SLOW_S)
        self._state.step_count += 1
        return EchoObservation(echoed_message=action.message, reward=1.0)

    def state(self) -> EchoState:
        return self._state
