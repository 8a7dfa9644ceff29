"""Monarch actors (imported only with Monarch): ``RolloutActor`` and ``TrainerActor``.

Each lives in its own process of one proc mesh: the trainer at index 0, rollout worker
``i`` at index ``1 + i``. On CUDA, index ``k`` is pinned to GPU ``k`` (modulo the GPUs
there are, so fewer GPUs than processes share them); on CPU each is a plain process.
"""

from __future__ import annotations

import os
import time
from typing import Any

from monarch.actor import Actor, current_rank, endpoint

from ._config import TrainConfig
from ._rollout import Episode, RolloutSettings
from ._workers import RolloutWorker


def pin_gpu(index: int, gpus: int) -> str:
    """This process's device: GPU ``index`` modulo the ``gpus`` visible ones.

    Before CUDA is initialised (actor constructors run first) the GPU becomes the only
    visible one (``CUDA_VISIBLE_DEVICES``, which an engine's own subprocesses inherit) and
    the device is ``"cuda"``; otherwise the device is ``"cuda:<index>"``.
    """
    import torch

    if gpus < 1:
        raise ValueError("--device cuda: no CUDA GPU is visible to the worker processes")
    if torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        torch.cuda.set_device(index % gpus)
        return f"cuda:{index % gpus}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(i) for i in range(gpus)]
    os.environ["CUDA_VISIBLE_DEVICES"] = ids[index % min(gpus, len(ids))]
    return "cuda"


def _cpu_threads(n: int) -> None:
    import torch

    torch.set_num_threads(max(1, n))


class RolloutActor(Actor):  # type: ignore[misc]
    """One rollout worker process."""

    def __init__(
        self,
        model: str,
        urls: list[str],
        settings: RolloutSettings,
        seed: int,
        device: str,
        sampler: str = "hf",
        gpus: int = 0,
    ) -> None:
        if device == "cpu":
            _cpu_threads(1)  # one core per worker process: no oversubscription
        else:
            device = pin_gpu(1 + current_rank().rank, gpus)  # index 0 is the trainer's
        self.worker = RolloutWorker(model, urls, settings, seed=seed, device=device, sampler=sampler)

    @endpoint  # type: ignore[untyped-decorator]
    async def load_state(self, blob: bytes, version: int) -> None:
        self.worker.load_state(blob, version)

    @endpoint  # type: ignore[untyped-decorator]
    async def rollout(self, step: int, groups: list[tuple[int, int]]) -> list[Episode]:
        return await self.worker.rollout(step, groups)

    @endpoint  # type: ignore[untyped-decorator]
    async def close(self) -> None:
        await self.worker.close()


class TrainerActor(Actor):  # type: ignore[misc]
    """The learner in its own process; sends weights straight to the rollout actors."""

    def __init__(self, cfg: TrainConfig, rollout: Any, threads: int, gpus: int = 0) -> None:
        device = "cpu"
        if cfg.device == "cpu":
            _cpu_threads(threads)
        else:
            device = pin_gpu(0, gpus)
        from ._learner import Learner

        self.learner = Learner(cfg, device)
        self.rollout = rollout

    @endpoint  # type: ignore[untyped-decorator]
    async def restore(self) -> int:
        return self.learner.restore()

    @endpoint  # type: ignore[untyped-decorator]
    async def push(self, version: int) -> float:
        """Weights of the current policy to every rollout actor, one blob each; seconds."""
        t0 = time.perf_counter()
        await self.rollout.load_state.call(self.learner.blob(), version)
        return time.perf_counter() - t0

    @endpoint  # type: ignore[untyped-decorator]
    async def update(self, episodes: list[Episode], adv: list[float]) -> dict[str, float]:
        return self.learner.update(episodes, adv)

    @endpoint  # type: ignore[untyped-decorator]
    async def save(self, step: int) -> None:
        self.learner.save(step)
