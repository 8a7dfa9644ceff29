"""Rollout workers: the same ``RolloutWorker`` in the trainer's process or as Monarch actors.

A worker holds its own copy of the policy, one connection per env URL and the text-env
description of each env. ``load_state`` receives the whole state dict as one serialized
blob (one message per worker, never one per parameter); ``rollout`` plays the groups it
is given and returns their ``Episode`` objects. With ``sampler="vllm"`` a vLLM engine
samples (``_vllm.py``) and takes the blobs; the worker's model copy stays on the CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import zlib
from collections.abc import Sequence
from typing import Any

import torch

from .._exceptions import OpenEnvError
from .._health import is_healthy
from ._model import Policy, load_policy
from ._rollout import Episode, RolloutSettings, run_wave
from ._sampler import EnginePolicy
from ._text import TextEnv, fetch_schema, text_env


class RolloutWorker:
    """Plays episodes against env servers with its own policy copy."""

    def __init__(
        self,
        model: str,
        urls: Sequence[str],
        settings: RolloutSettings,
        *,
        seed: int,
        device: str = "cpu",
        policy: Policy | None = None,
        sampler: str = "hf",
        gpu_memory_utilization: float = 0.85,
    ) -> None:
        self.device = torch.device(device)
        self.policy = policy if policy is not None else load_policy(model, seed=seed)
        self.engine: Any = None
        if sampler == "vllm":
            from ._vllm import VllmEngine

            self.engine = VllmEngine(
                model,
                seed=seed,
                stop_ids=self.policy.renderer.stop_ids,
                gpu_memory_utilization=gpu_memory_utilization,
            )
            p = self.policy
            self.policy = EnginePolicy(p.model, p.renderer, p.name, engine=self.engine)
        else:
            self.policy.model.to(self.device)
        self.urls = list(urls)
        self.settings = settings
        self.seed = seed
        self.version = 0
        self._clients: dict[str, Any] = {}
        self._text: dict[str, TextEnv] = {}

    def load_state(self, blob: bytes, version: int) -> None:
        if blob and self.engine is not None:
            self.engine.load_state(blob)
        elif blob:
            state = torch.load(io.BytesIO(blob), map_location=self.device, weights_only=True)
            self.policy.model.load_state_dict(state)
        self.version = version

    async def _connection(self, url: str) -> tuple[Any, TextEnv]:
        from ..client import AsyncEnvClient

        if url not in self._text:
            schema = await asyncio.wait_for(
                asyncio.to_thread(fetch_schema, url, self.settings.env_timeout_s),
                self.settings.env_timeout_s,
            )
            self._text[url] = text_env(
                schema,
                observation_adapter=self.settings.observation_adapter,
                action_adapter=self.settings.action_adapter,
            )
        client = self._clients.get(url)
        if client is None or client._closed:
            client = AsyncEnvClient(url, timeout_s=self.settings.env_timeout_s)
            await client.connect()
            if not client.extended:
                raise OpenEnvError(f"{url} does not speak the openenv.v1 extensions (named sessions, batch)")
            self._clients[url] = client
        return client, self._text[url]

    async def rollout(self, step: int, groups: Sequence[Group]) -> list[Episode]:
        """Play ``groups`` (``(group index, seed)``); group ``g`` goes to ``urls[g % len(urls)]``,
        or to the URL a group carries as a third item (routed by a replica pool)."""
        by_url: dict[str, list[tuple[int, int]]] = {}
        for group in groups:
            g, seed = group[0], group[1]
            url = group[2] if len(group) == 3 else self.urls[g % len(self.urls)]
            by_url.setdefault(url, []).append((g, seed))
        results = await asyncio.gather(*(self._on_url(step, url, gs) for url, gs in by_url.items()))
        return [e for episodes in results for e in episodes]

    async def _on_url(self, step: int, url: str, groups: list[tuple[int, int]]) -> list[Episode]:
        cfg = self.settings
        per_wave = max(1, cfg.max_sessions // cfg.group_size)
        # seeded by the run, the step, the URL's index and the first group: ports may differ
        index = self.urls.index(url) if url in self.urls else -1  # -1: a routed replica
        key = f"{self.seed}/{step}/{index}/{groups[0][0]}"
        gen = torch.Generator().manual_seed(zlib.crc32(key.encode()))
        out: list[Episode] = []
        for start in range(0, len(groups), per_wave):
            wave = groups[start : start + per_wave]
            try:
                client, text = await self._connection(url)
            except (OpenEnvError, OSError, TimeoutError) as exc:
                out += failed_episodes(
                    wave, cfg.group_size, f"cannot reach {url}: {type(exc).__name__}: {exc}"
                )
                continue
            out += await run_wave(
                client, text, self.policy, wave, cfg, version=self.version, generator=gen, device=self.device
            )
        if any(e.error for e in out) and not await asyncio.to_thread(is_healthy, url):
            self._clients.pop(url, None)  # its replica is gone: the episodes were lost with it
            for e in out:
                if e.error and not e.error.startswith(REPLICA_LOST):
                    e.error = f"{REPLICA_LOST}: {url} is gone ({e.error})"
        return out

    async def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            with contextlib.suppress(OpenEnvError, OSError):
                await client.close()


#: How the error of an episode lost with its env replica begins (counted per step).
REPLICA_LOST = "ReplicaLost"

#: A group: ``(index, seed)``, or ``(index, seed, url)`` when a replica pool routes it.
Group = tuple[int, int] | tuple[int, int, str]


def failed_episodes(groups: Sequence[tuple[int, int]], group_size: int, error: str) -> list[Episode]:
    out = []
    for g, seed in groups:
        for k in range(group_size):
            e = Episode(g, seed, f"g{g}-{k}")
            e.fail(error)
            out.append(e)
    return out
