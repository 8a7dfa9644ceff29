"""A tiny ``gymnasium.Env`` subclass served by ``module:Class`` in the tests."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces


class Walk(gymnasium.Env[dict[str, Any], int]):
    """Walk on a line of ``size`` cells; reach the right end. Dict observation."""

    def __init__(self, size: int = 5) -> None:
        self.size = size
        self.observation_space = spaces.Dict(
            {"pos": spaces.Discrete(size), "grid": spaces.Box(0, 1, (size,), np.int8)}
        )
        self.action_space = spaces.Discrete(2)
        self.pos = 0

    def _obs(self) -> dict[str, Any]:
        grid = np.zeros(self.size, dtype=np.int8)
        grid[self.pos] = 1
        return {"pos": self.pos, "grid": grid}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.pos = int((options or {}).get("start", self.np_random.integers(0, self.size - 1)))
        return self._obs(), {"start": self.pos}

    def step(self, action: int) -> Any:
        self.pos = max(0, min(self.size - 1, self.pos + (1 if action == 1 else -1)))
        done = self.pos == self.size - 1
        return self._obs(), 1.0 if done else -0.1, done, False, {"pos": self.pos}
