"""Where rollout workers run: in the trainer's process, or as Monarch actors.

``LocalPool`` shares the trainer's policy object with one in-process worker (weight
sync costs nothing). ``MonarchPool`` spawns ``workers`` processes with Monarch
(``torchmonarch``): one per GPU on CUDA, plain processes on CPU; each holds a
``RolloutActor``. Weights go to all of them as one blob per actor per step. The same
code runs on many hosts by spawning the process mesh from another Monarch host mesh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from ._model import Policy
from ._rollout import Episode, RolloutSettings
from ._workers import RolloutWorker, failed_episodes, state_blob


async def _awaited(future: Any) -> Any:
    return await future


class Pool(Protocol):
    async def sync(self, policy: Policy, version: int) -> None: ...

    async def rollout(self, step: int, groups: Sequence[tuple[int, int]]) -> list[Episode]: ...

    async def close(self) -> None: ...


class LocalPool:
    """One worker in this process, on the trainer's own policy."""

    def __init__(
        self, policy: Policy, urls: Sequence[str], settings: RolloutSettings, *, seed: int, device: str
    ) -> None:
        self.worker = RolloutWorker(policy.name, urls, settings, seed=seed, device=device, policy=policy)

    async def sync(self, policy: Policy, version: int) -> None:
        self.worker.load_state(b"", version)  # same object: only the version moves

    async def rollout(self, step: int, groups: Sequence[tuple[int, int]]) -> list[Episode]:
        return await self.worker.rollout(step, groups)

    async def close(self) -> None:
        await self.worker.close()


class MonarchPool:
    """``workers`` Monarch processes, each with one ``RolloutActor``."""

    def __init__(
        self,
        model: str,
        urls: Sequence[str],
        settings: RolloutSettings,
        *,
        workers: int,
        seed: int,
        device: str,
    ) -> None:
        from .._extras import require

        require("monarch.actor", extra="train", feature="rollout workers (--workers)")
        from monarch.actor import this_host

        per_host = {"gpus": workers} if device == "cuda" else {"procs": workers}
        self.n = workers
        self.settings = settings
        self.procs = this_host().spawn_procs(per_host=per_host)
        from ._actor import RolloutActor

        self.actors = self.procs.spawn("rollout", RolloutActor, model, list(urls), settings, seed, device)
        self._dim = next(iter(per_host))

    async def sync(self, policy: Policy, version: int) -> None:
        await self.actors.load_state.call(state_blob(policy), version)

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
            call = self.actors.slice(**{self._dim: i}).rollout.call_one(step, share)
            episodes: list[Episode] = await asyncio.wait_for(_awaited(call), deadline)
            return episodes
        except Exception as exc:
            return failed_episodes(share, s.group_size, f"rollout worker {i}: {type(exc).__name__}: {exc}")

    async def close(self) -> None:
        try:
            await self.actors.close.call()
        finally:
            await self.procs.stop()
