"""Shared helpers for the trainer tests: small configs and a slow env."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from openenv import Execution
from openenv.train import TrainConfig

from ._count_env import CountAction, CountEnv, CountObservation


class SlowCountEnv(CountEnv):
    """``CountEnv`` whose steps take ``delay_s`` (in a thread: the server loop stays free)."""

    execution = Execution.THREAD
    delay_s = 3.0

    def step(self, action: CountAction) -> CountObservation:
        time.sleep(self.delay_s)
        return super().step(action)


def small_config(urls: list[str], out: str, **overrides: Any) -> TrainConfig:
    """A few quick steps of the tiny model on CountEnv."""
    values: dict[str, Any] = {
        "env": urls,
        "out": out,
        "steps": 3,
        "group_size": 4,
        "prompts_per_step": 4,
        "max_new_tokens": 1,
        "lr": 3e-3,
        "progress": False,
        "env_timeout_s": 10.0,
        "episode_timeout_s": 30.0,
    }
    values.update(overrides)
    return TrainConfig(**values)


def echo_text(observation: Mapping[str, Any]) -> str:
    """Adapter for the echo env, which is not a text env: its observation has no prompt."""
    return str(observation["echoed_message"])
