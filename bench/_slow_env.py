"""A slow env for the scaling benchmark: each step sleeps ``SLOW_S`` (50 ms) in a thread.

The sleep costs no CPU, so on a 2-core machine several replicas can each be held at
their own limit: ``Execution.THREAD`` runs every step on the server's shared pool of
``thread_workers`` threads, so one replica serves at most ``thread_workers / SLOW_S``
steps/s however many sessions it holds (bench/bench_scale.py sets the pool size).
The rest (models, reset, state) is ``bench/_busy_env.py``'s echo.
"""

from __future__ import annotations

import os
import time

from echo_env import EchoAction, EchoObservation

from bench._busy_env import BusyEnv
from openenv import Execution

SLOW_S = float(os.environ.get("OPENENV_BENCH_SLOW_S", "0.05"))


class SlowEnv(BusyEnv):
    """Echo, after sleeping SLOW_S seconds per step."""

    execution = Execution.THREAD

    def step(self, action: EchoAction) -> EchoObservation:
        time.sleep(SLOW_S)
        self._state.step_count += 1
        return EchoObservation(echoed_message=action.message, reward=1.0)
