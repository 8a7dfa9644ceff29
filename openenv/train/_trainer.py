"""The GRPO loop: sync weights -> roll out groups -> advantages -> one update -> log.

One linear loop over a ``TrainConfig`` (nanoGPT-style); the algorithm choices are the
functions in the config (``advantage``, ``loss``). The loop only orchestrates: the
learner (``_learner.py``) and the rollout workers live in a ``Pool`` (``_pool.py``), in
this process (``workers == 0``) or as Monarch actors.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from ._config import TrainConfig
from ._learner import load_checkpoint, pick_device, save_checkpoint, update
from ._metrics import MetricsLog, keep_before, percentile
from ._pool import LocalPool, MonarchPool, Pool
from ._preflight import check_envs, check_step
from ._rollout import Episode, RolloutSettings
from ._sampler import choose_sampler
from ._workers import REPLICA_LOST

__all__ = [  # the learner's functions stay importable from here
    "advantages",
    "load_checkpoint",
    "pick_device",
    "rollout_settings",
    "save_checkpoint",
    "split_stale",
    "task_seed",
    "train",
    "update",
]


def task_seed(cfg: TrainConfig, step: int, group: int) -> int:
    """The reset seed of ``group`` at ``step``: every group sees a new task."""
    return cfg.task_seed_base + step * cfg.prompts_per_step + group


def advantages(cfg: TrainConfig, episodes: list[Episode]) -> tuple[dict[int, float], dict[str, float]]:
    """Advantage per episode (by ``id``) from its group; failed episodes stay out."""
    groups: dict[int, list[Episode]] = {}
    for e in episodes:
        groups.setdefault(e.group, []).append(e)
    adv: dict[int, float] = {}
    zero_std = scored = 0
    for members in groups.values():
        rewards = torch.tensor([float("nan") if e.reward is None else e.reward for e in members])
        for e, a in zip(members, cfg.advantage(rewards).tolist(), strict=True):
            adv[id(e)] = a
        valid = rewards[~torch.isnan(rewards)]
        if len(valid) >= 2:
            scored += 1
            zero_std += int(bool((valid == valid[0]).all()))
    return adv, {"frac_zero_std": zero_std / scored if scored else float("nan")}


def rollout_settings(cfg: TrainConfig) -> RolloutSettings:
    return RolloutSettings(
        group_size=cfg.group_size,
        max_turns=cfg.max_turns,
        max_new_tokens=cfg.max_new_tokens,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        max_sessions=cfg.max_sessions,
        env_timeout_s=cfg.env_timeout_s,
        episode_timeout_s=cfg.episode_timeout_s,
        observation_adapter=cfg.observation_adapter,
        action_adapter=cfg.action_adapter,
    )


def train(cfg: TrainConfig) -> list[dict[str, Any]]:
    """Run ``cfg``; returns the metrics rows of the steps run (also in ``DIR/metrics.jsonl``).

    Raises ``TrainingFailed`` when an env cannot be reached before the first step, or
    when no episode of a step succeeded (after writing that step's metrics row).
    """
    pick_device(cfg.device)
    if cfg.model != "tiny" and not Path(cfg.model).is_dir():  # before any process starts
        raise ValueError(f"model {cfg.model!r} is neither the preset 'tiny' nor a local model folder")
    sampler = choose_sampler(cfg.sampler, cfg.model, cfg.device)  # what was asked for can run
    replicas = _env_replicas(cfg) if cfg.env_replicas > 0 else None
    try:
        if replicas is None:
            return _train(cfg, sampler, None, cfg)
        # the run plays on the replicas' URLs; DIR/config.json keeps what was asked for
        return _train(dataclasses.replace(cfg, env=replicas.urls, env_replicas=0), sampler, replicas, cfg)
    finally:
        if replicas is not None:
            replicas.stop()


def _env_replicas(cfg: TrainConfig) -> Any:
    """``env_replicas`` servers of ``env[0]`` on this Monarch host (the rollout workers' own)."""
    from .._extras import require

    require("monarch.actor", extra="train", feature="env replicas (--env-replicas)")
    from monarch.actor import this_host

    from ..containers._monarch import MonarchProvider, MonarchReplicaPool

    provider = MonarchProvider(cfg.env[0], hosts=this_host(), start_timeout_s=max(60.0, cfg.env_timeout_s))
    return MonarchReplicaPool(provider, cfg.env_replicas).open()


def _train(cfg: TrainConfig, sampler: str, replicas: Any, asked: TrainConfig) -> list[dict[str, Any]]:
    check_envs(cfg)  # then: can the envs be reached
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = rollout_settings(cfg)
    rows: list[dict[str, Any]] = []
    threads = torch.get_num_threads()
    if cfg.workers > 0:
        # This process only orchestrates: the learner and the rollouts have processes of
        # their own. Idle OpenMP threads here would spin and starve them (measured with
        # the learner in this process: rollouts 10x slower on 2 cores).
        torch.set_num_threads(1)
    try:
        with asyncio.Runner() as runner:
            pool: Pool = (
                MonarchPool(cfg, settings, sampler=sampler)
                if cfg.workers > 0
                else LocalPool(cfg, settings, sampler=sampler)
            )
            log: MetricsLog | None = None
            try:
                start = runner.run(pool.restore())
                if not cfg.resume:
                    (out / "metrics.jsonl").unlink(missing_ok=True)
                keep_before(out, start)
                (out / "config.json").write_text(json.dumps(asked.to_dict(), indent=1, default=str))
                log = MetricsLog(out, cfg.steps, cfg.progress, tensorboard=cfg.tensorboard, start=start)
                rollouts = _Rollouts(runner, pool, cfg, replicas)
                for step in range(start, cfg.steps):
                    row = _step(runner, pool, rollouts, cfg, step)
                    log.write(row)
                    rows.append(row)
                    check_step(cfg, row)
                    if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                        runner.run(pool.save(step + 1))
            finally:
                if log is not None:
                    log.close()
                runner.run(pool.close())
    finally:
        torch.set_num_threads(threads)
    return rows


def _step(
    runner: asyncio.Runner, pool: Pool, rollouts: _Rollouts, cfg: TrainConfig, step: int
) -> dict[str, Any]:
    """Roll out, score and train one step; its metrics row."""
    t0 = time.perf_counter()
    episodes, sync_s = rollouts.episodes_of(step)
    t1, t2 = t0 + sync_s, time.perf_counter()
    row = _score(cfg, step, episodes)
    fresh, stale = split_stale(episodes, step, cfg.max_staleness)
    adv, group_stats = advantages(cfg, episodes)
    row.update(group_stats)
    if fresh and sum(sum(e.mask) for e in fresh) > 0:
        row.update(runner.run(pool.update(fresh, [adv[id(e)] for e in fresh])))
    t3 = time.perf_counter()
    sampled = sum(sum(e.mask) for e in episodes if e.reward is not None)
    row.update(
        weight_sync_s=sync_s,
        rollout_s=t2 - t1,
        train_s=t3 - t2,
        step_time_s=t3 - t0,
        gen_tokens_per_s=sampled / max(t2 - t1, 1e-9),
        train_tokens_per_s=sum(len(e.tokens) for e in fresh) / max(t3 - t2, 1e-9),
        episodes_per_s=row["episodes"] / max(t2 - t1, 1e-9),
        staleness_max=max((_staleness(e, step) for e in fresh), default=0),
        staleness_mean=statistics.fmean(_staleness(e, step) for e in fresh) if fresh else 0.0,
        stale_dropped=len(stale),
    )
    return row


def split_stale(
    episodes: list[Episode], step: int, max_staleness: int
) -> tuple[list[Episode], list[Episode]]:
    """The scored episodes trained on at ``step`` (sampled at most ``max_staleness``
    versions ago) and the scored ones dropped for being older."""
    scored = [e for e in episodes if e.reward is not None]
    fresh = [e for e in scored if _staleness(e, step) <= max_staleness]
    return fresh, [e for e in scored if _staleness(e, step) > max_staleness]


class _Rollouts:
    """Rollouts step by step; with ``max_staleness = N >= 1`` up to N steps ahead.

    Pipelined, once the episodes of step ``s`` are in (before its update) the rollouts
    of steps ``s + 1 .. s + N`` not yet running are started with the weights of version
    ``s``, so Monarch workers sample while the trainer trains; step ``s + N`` then
    trains on episodes N versions old, with the ratio taken against the sampler's
    logprobs (the first N steps on fresher ones). An in-process pool has nothing to
    overlap with and runs each rollout when it is started.
    """

    def __init__(self, runner: asyncio.Runner, pool: Pool, cfg: TrainConfig, replicas: Any = None) -> None:
        self.runner, self.pool, self.cfg = runner, pool, cfg
        self.pending: dict[int, Any] = {}  # step -> its episodes, or the task making them
        self.pushed: int | None = None  # the version the workers hold
        self.replicas = replicas  # a MonarchReplicaPool: each group leases a replica
        self.leased: list[str] = []

    def _start(self, step: int, version: int) -> float:
        t0 = time.perf_counter()
        if self.pushed != version:
            self.runner.run(self.pool.push(version))
            self.pushed = version
        sync_s = time.perf_counter() - t0
        groups: list[Any] = [(g, task_seed(self.cfg, step, g)) for g in range(self.cfg.prompts_per_step)]
        if self.replicas is not None:  # the least-loaded live replica per group (lost ones replaced)
            urls = [self.replicas.acquire() for _ in groups]
            self.leased += urls
            groups = [(g, seed, url) for (g, seed), url in zip(groups, urls, strict=True)]
        if isinstance(self.pool, LocalPool):
            self.pending[step] = self.runner.run(self.pool.rollout(step, groups))
        else:
            task = self.runner.get_loop().create_task(self.pool.rollout(step, groups))
            self.runner.run(asyncio.sleep(0))  # let it send its calls to the workers
            self.pending[step] = task
        return sync_s

    async def _wait(self, task: asyncio.Task[list[Episode]]) -> list[Episode]:
        return await task

    def episodes_of(self, step: int) -> tuple[list[Episode], float]:
        """The episodes of ``step`` and the seconds spent sending weights."""
        sync_s = self._start(step, step) if step not in self.pending else 0.0
        result = self.pending.pop(step)
        episodes = result if isinstance(result, list) else self.runner.run(self._wait(result))
        if self.replicas is not None:  # the step's groups are done with their replicas
            done, self.leased = (
                self.leased[: self.cfg.prompts_per_step],
                self.leased[self.cfg.prompts_per_step :],
            )
            for url in done:
                self.replicas.release(url)
        for ahead in range(step + 1, min(step + self.cfg.max_staleness, self.cfg.steps - 1) + 1):
            if ahead not in self.pending:  # started in order, so leases are released in order
                sync_s += self._start(ahead, step)
        return episodes, sync_s


def _staleness(e: Episode, step: int) -> int:
    versions = [v for v in e.versions if v >= 0]
    return step - min(versions) if versions else 0


def _score(cfg: TrainConfig, step: int, episodes: list[Episode]) -> dict[str, Any]:
    rewards = [e.reward for e in episodes if e.reward is not None]
    latencies = [t for e in episodes for t in e.env_latency_s]
    ok = [e for e in episodes if e.reward is not None]
    return {
        "step": step,
        "reward_mean": statistics.fmean(rewards) if rewards else float("nan"),
        "reward_std": statistics.pstdev(rewards) if rewards else float("nan"),
        "episodes": len(rewards),
        "failed": len(episodes) - len(rewards),
        "replica_lost": sum(bool(e.error and e.error.startswith(REPLICA_LOST)) for e in episodes),
        "tokens": sum(sum(e.mask) for e in ok),
        "context_tokens": sum(len(e.tokens) for e in ok),
        "turns_mean": statistics.fmean(e.turns for e in ok) if ok else float("nan"),
        "truncated_frac": sum(e.truncated for e in ok) / len(ok) if ok else float("nan"),
        "env_latency_p50_ms": 1000 * percentile(latencies, 50),
        "env_latency_p90_ms": 1000 * percentile(latencies, 90),
        # the longest time one episode spent waiting on env calls (with one wave per
        # connection, the env's part of the rollout's wall time)
        "env_wall_s": max((sum(e.env_latency_s) for e in episodes), default=0.0),
        "errors": sorted({e.error for e in episodes if e.error})[:3],
    }
