"""A CPU-bound env for the workers benchmark: each step burns ``BUSY_US`` of CPU.

The echo env costs the server ~0.1 ms per step, less than the load generator spends,
so on a small machine the client, not the server, limits throughput. This env makes
the server the bottleneck, which is when ``--workers`` matters.
"""

from __future__ import annotations

import os
import time
from typing import Any

from echo_env import EchoAction, EchoObservation, EchoState

from openenv import Environment, Execution

BUSY_US = float(os.environ.get("OPENENV_BENCH_BUSY_US", "1000"))


class BusyEnv(Environment[EchoAction, EchoObservation, EchoState]):
    """Echo, after burning BUSY_US microseconds of CPU per step."""

    execution = Execution.INLINE  # CPU work on the worker's loop: the case workers spread

    def __init__(self) -> None:
        self._state = EchoState()

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None
    ) -> EchoObservation:
        self._state = EchoState(episode_id=episode_id)
        return EchoObservation(echoed_message="ready")

    def step(self, action: EchoAction) -> EchoObservation:
        end = time.perf_counter() + BUSY_US / 1e6
        while time.perf_counter() < end:
            pass
        self._state.step_count += 1
        return EchoObservation(echoed_message=action.message, reward=1.0)

    def state(self) -> EchoState:
        return self._state
