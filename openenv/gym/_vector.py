"""``RemoteVectorEnv``: N sessions of one server as a ``gymnasium.vector.VectorEnv``.

All N sessions share one WebSocket; each ``step`` is one ``batch`` frame carrying
the N steps (and the resets of sub-envs that ended on the previous step: gymnasium's
``NEXT_STEP`` autoreset), answered by one frame.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from ..client._batch import BatchItem, Reset, Step
from ._remote import RemoteSpec


class RemoteVectorEnv(VectorEnv[Any, Any, Any]):
    """``num_envs`` sessions stepped together through batch messages on one connection.

    Args:
        url: the server.
        num_envs: how many sessions.
        binary: msgpack frames (arrays as bytes); default True.
        action_space, observation_space: declare the single-env spaces.
        reset_options: sent with every reset.
        client_kwargs: more ``EnvClient`` arguments.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        url: str,
        num_envs: int,
        *,
        binary: bool = True,
        action_space: gymnasium.Space[Any] | None = None,
        observation_space: gymnasium.Space[Any] | None = None,
        reset_options: dict[str, Any] | None = None,
        **client_kwargs: Any,
    ) -> None:
        from ..client._sync import EnvClient

        if num_envs < 1:
            raise ValueError("num_envs must be at least 1")
        self.spec_ = RemoteSpec(url, action_space, observation_space)
        self.num_envs = num_envs
        self.single_action_space = self.spec_.action_space
        self.single_observation_space = self.spec_.observation_space
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.reset_options = dict(reset_options or {})
        self.client: Any = EnvClient(url, binary=binary, **client_kwargs).connect()
        self.keys = [f"env{i}" for i in range(num_envs)]
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._obs: Any = create_empty_array(self.single_observation_space, num_envs)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=None)
        seeds = self._seeds(seed)
        opts = {**self.reset_options, **(options or {})}
        results = self.client.batch(
            [Reset(key, seed=s, options=opts) for key, s in zip(self.keys, seeds, strict=True)]
        )
        self._autoreset[:] = False
        obs, info, *_ = self._collect(results, [False] * self.num_envs)
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        items: list[BatchItem] = []
        for i, action in enumerate(iterate(self.action_space, actions)):
            key = self.keys[i]
            if self._autoreset[i]:
                items.append(Reset(key, options=self.reset_options))
            else:
                items.append(Step(key, self.spec_.action(action)))
        results = self.client.batch(items)
        obs, info, rewards, terminated, truncated = self._collect(results, list(self._autoreset))
        self._autoreset = terminated | truncated
        return obs, rewards, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        self.client.close()

    # --- internals ----------------------------------------------------------------

    def _seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int):
            return [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(f"{len(seed)} seeds for {self.num_envs} envs")
        return list(seed)

    def _collect(self, results: list[Any], was_reset: list[bool]) -> tuple[Any, ...]:
        n = self.num_envs
        rewards = np.zeros(n, dtype=np.float64)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        singles = []
        infos: dict[str, Any] = {}
        for i, result in enumerate(results):
            obs, info = self.spec_.observation(result)
            singles.append(obs)
            if not was_reset[i]:
                rewards[i] = float(result.reward or 0.0)
                terminated[i] = result.terminated
                truncated[i] = result.truncated
            if info:
                infos = self._add_info(infos, info, i)
        self._obs = concatenate(self.single_observation_space, singles, self._obs)
        obs = self._obs.copy() if isinstance(self._obs, np.ndarray) else self._obs
        return obs, infos, rewards, terminated, truncated
