"""Where the learner and the rollout workers run: this process, or Monarch actors.

The ``train()`` loop drives a ``Pool``: ``restore`` -> per step ``push`` (weights to
the rollout workers), ``rollout``, ``update``, ``save``. ``LocalPool`` holds the learner
and one rollout worker in this process, sharing the policy object (weight sync costs
nothing). ``MonarchPool`` spawns one proc mesh of ``workers + 1`` processes
(``torchmonarch``; on CUDA one GPU each): a ``TrainerActor`` at index 0 holding the
learner, a ``RolloutActor`` at each other index. The trainer actor is handed the
rollout actor mesh and sends it the weights itself, one blob per worker per step: they
never pass through this process. The same code runs on many hosts by spawning the proc
mesh from another Monarch host mesh.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import torch

from ._config import TrainConfig
from ._learner import Learner
from ._rollout import Episode, RolloutSettings
from ._workers import RolloutWorker, failed_episodes


async def _awaited(future: Any) -> Any:
    return await future


class Pool(Protocol):
    async def restore(self) -> int: ...

    async def push(self, version: int) -> float: ...

    async def rollout(self, step: int, groups: Sequence[tuple[int, int]]) -> list[Episode]: ...

    async def update(self, episodes: list[Episode], adv: list[float]) -> dict[str, float]: ...

    async def save(self, step: int) -> None: ...

    async def close(self) -> None: ...


class LocalPool:
    """The learner and one rollout worker in this process."""

    def __init__(self, cfg: TrainConfig, settings: RolloutSettings, *, sampler: str) -> None:
        self.learner = Learner(cfg)
        shared = self.learner.policy if sampler == "hf" else None
        self.worker = RolloutWorker(
            cfg.model,
            cfg.env,
            settings,
            seed=cfg.seed,
            device=cfg.device,
            policy=shared,
            sampler=sampler,
            gpu_memory_utilization=0.4,  # the learner shares the GPU
        )
        self.shared = shared is not None

    async def restore(self) -> int:
        return self.learner.restore()

    async def push(self, version: int) -> float:
        # the same policy object: only the version moves (an engine takes a blob)
        self.worker.load_state(b"" if self.shared else self.learner.blob(), version)
        return 0.0

    async def rollout(self, step: int, groups: Sequence[tuple[int, int]]) -> list[Episode]:
        return await self.worker.rollout(step, groups)

    async def update(self, episodes: list[Episode], adv: list[float]) -> dict[str, float]:
        return self.learner.update(episodes, adv)

    async def save(self, step: int) -> None:
        self.learner.save(step)

    async def close(self) -> None:
        await self.worker.close()


class MonarchPool:
    """``workers + 1`` Monarch processes: a ``TrainerActor`` and ``workers`` ``RolloutActor``."""

    def __init__(self, cfg: TrainConfig, settings: RolloutSettings, *, sampler: str) -> None:
        from .._extras import require

        require("monarch.actor", extra="train", feature="rollout workers (--workers)")
        from monarch.actor import this_host

        from ._actor import RolloutActor, TrainerActor

        n = cfg.workers
        cfg = dataclasses.replace(cfg, out=str(Path(cfg.out).resolve()))  # the same folder there
        dim = "gpus" if cfg.device == "cuda" else "procs"
        gpus = torch.cuda.device_count() if cfg.device == "cuda" else 0
        self.n, self.dim, self.settings = n, dim, settings
        self.procs = this_host().spawn_procs(per_host={dim: n + 1})
        self.actors = self.procs.slice(**{dim: slice(1, n + 1)}).spawn(
            "rollout", RolloutActor, cfg.model, list(cfg.env), settings, cfg.seed, cfg.device, sampler, gpus
        )
        # on CPU the learner gets the cores the rollout processes leave
        threads = max(1, (os.cpu_count() or 1) - n)
        self.trainer = self.procs.slice(**{dim: 0}).spawn(
            "trainer", TrainerActor, cfg, self.actors, threads, gpus
        )

    async def restore(self) -> int:
        step: int = await self.trainer.restore.call_one()
        return step

    async def push(self, version: int) -> float:
        seconds: float = await self.trainer.push.call_one(version)
        return seconds

    async def update(self, episodes: list[Episode], adv: list[float]) -> dict[str, float]:
        stats: dict[str, float] = await self.trainer.update.call_one(episodes, adv)
        return stats

    async def save(self, step: int) -> None:
        await self.trainer.save.call_one(step)

    async def rollout(self, step: int, groups: Sequence[tuple[int, int]]) -> list[Episode]:
        shares = [list(groups[i :: self.n]) for i in range(self.n)]
        calls = [self._share(i, step, share) for i, share in enumerate(shares) if share]
        results = await asyncio.gather(*calls)
        return sorted((e for r in results for e in r), key=lambda e: (e.group, e.session))

    async def _share(self, i: int, step: int, share: list[tuple[int, int]]) -> list[Episode]:
        """Worker ``i``'s episodes; a worker that fails or overruns fails its episodes only."""
        s = self.settings
        # each wave on a connection is bounded by episode_timeout_s; a margin for the rest
        deadline = s.episode_timeout_s * (len(share) + 1) + 60.0
        try:
            call = self.actors.slice(**{self.dim: i}).rollout.call_one(step, share)
            episodes: list[Episode] = await asyncio.wait_for(_awaited(call), deadline)
            return episodes
        except Exception as exc:
            return failed_episodes(share, s.group_size, f"rollout worker {i}: {type(exc).__name__}: {exc}")

    async def close(self) -> None:
        try:
            await self.actors.close.call()
        finally:
            await self.procs.stop()
