"""``RolloutActor``: a ``RolloutWorker`` behind Monarch endpoints (imported only with Monarch)."""

from __future__ import annotations

from monarch.actor import Actor, endpoint

from ._rollout import Episode, RolloutSettings
from ._workers import RolloutWorker


class RolloutActor(Actor):  # type: ignore[misc]
    """One rollout worker process."""

    def __init__(
        self, model: str, urls: list[str], settings: RolloutSettings, seed: int, device: str
    ) -> None:
        if device == "cpu":
            import torch

            torch.set_num_threads(1)  # one core per worker process: no oversubscription
        self.worker = RolloutWorker(model, urls, settings, seed=seed, device=device)

    @endpoint  # type: ignore[untyped-decorator]
    async def load_state(self, blob: bytes, version: int) -> None:
        self.worker.load_state(blob, version)

    @endpoint  # type: ignore[untyped-decorator]
    async def rollout(self, step: int, groups: list[tuple[int, int]]) -> list[Episode]:
        return await self.worker.rollout(step, groups)

    @endpoint  # type: ignore[untyped-decorator]
    async def close(self) -> None:
        await self.worker.close()
