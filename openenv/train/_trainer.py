"""The GRPO loop: sync weights -> roll out groups -> advantages -> one update -> log.

One linear loop over a ``TrainConfig`` (nanoGPT-style); the algorithm choices are the
functions in the config (``advantage``, ``loss``).
"""

from __future__ import annotations

import asyncio
import copy
import os
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ._algos import k3_kl, token_logprobs
from ._config import TrainConfig
from ._metrics import MetricsLog, keep_before, percentile
from ._model import Policy, hidden_and_head, load_policy
from ._pool import LocalPool, MonarchPool, Pool
from ._rollout import Episode, RolloutSettings


def pick_device(name: str) -> torch.device:
    """``cpu`` or ``cuda``; ``cuda`` without a visible GPU is a clear error."""
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "--device cuda: no CUDA GPU is visible to torch (torch.cuda.is_available() is False)"
        )
    return torch.device(name)


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


def _pad(rows: list[list[Any]], value: Any, dtype: torch.dtype) -> Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=dtype)


def update(
    cfg: TrainConfig,
    policy: Policy,
    ref: torch.nn.Module | None,
    opt: torch.optim.Optimizer,
    episodes: list[Episode],
    adv: dict[int, float],
    device: torch.device,
) -> dict[str, float]:
    """One optimizer step on ``episodes``; statistics over their sampled tokens."""
    pad = policy.renderer.pad_id
    ids = _pad([e.tokens for e in episodes], pad, torch.long)
    attn = _pad([[1] * len(e.tokens) for e in episodes], 0, torch.long)
    mask = _pad([e.mask for e in episodes], 0, torch.float)[:, 1:]
    old = _pad([e.logprobs for e in episodes], 0.0, torch.float)[:, 1:]
    a = torch.tensor([adv[id(e)] for e in episodes])
    n_tokens = float(mask.sum())
    n_seqs = float((mask.sum(1) > 0).sum())
    sums = dict.fromkeys(("loss", "entropy", "clip_low", "clip_high", "kl", "logprob_gap"), 0.0)
    policy.model.train()
    opt.zero_grad(set_to_none=True)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    for s in range(0, len(episodes), cfg.micro_batch):
        sl = slice(s, s + cfg.micro_batch)
        inp, am = ids[sl].to(device), attn[sl].to(device)
        m, o, av = mask[sl].to(device), old[sl].to(device), a[sl].to(device)
        with autocast:
            hidden, head = hidden_and_head(policy, inp[:, :-1], am[:, :-1])
            logp, ent = token_logprobs(hidden, head, inp[:, 1:], cfg.logprob_chunk, cfg.temperature)
        out = cfg.loss(
            logp, o, av, m, n_tokens=n_tokens, n_sequences=n_seqs, eps_low=cfg.eps_low, eps_high=cfg.eps_high
        )
        loss = out.loss
        if ref is not None:
            with torch.no_grad(), autocast:
                ref_hidden, ref_head = hidden_and_head(
                    Policy(ref, policy.renderer, "ref"), inp[:, :-1], am[:, :-1]
                )
                ref_logp, _ = token_logprobs(
                    ref_hidden, ref_head, inp[:, 1:], cfg.logprob_chunk, cfg.temperature
                )
            kl = (k3_kl(logp, ref_logp) * m).sum() / n_tokens
            loss = loss + cfg.kl_beta * kl
            sums["kl"] += float(kl.detach())
        loss.backward()  # type: ignore[no-untyped-call]
        sums["loss"] += float(loss.detach())
        sums["entropy"] += float((ent.detach() * m).sum()) / n_tokens
        sums["clip_low"] += float(out.clip_low)
        sums["clip_high"] += float(out.clip_high)
        sums["logprob_gap"] += float(((logp.detach() - o).abs() * m).sum()) / n_tokens
    sums["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(policy.model.parameters(), cfg.grad_clip))
    opt.step()
    if ref is None:
        sums["kl"] = float("nan")
    return sums


def save_checkpoint(
    out: Path, policy: Policy, opt: torch.optim.Optimizer, step: int, cfg: TrainConfig
) -> None:
    """``DIR/checkpoint.pt``: weights, optimizer, the next step; written atomically."""
    tmp = out / "checkpoint.pt.tmp"
    torch.save(
        {
            "model": policy.model.state_dict(),
            "optimizer": opt.state_dict(),
            "step": step,
            "config": cfg.to_dict(),
        },
        tmp,
    )
    os.replace(tmp, out / "checkpoint.pt")


def load_checkpoint(out: Path, policy: Policy, opt: torch.optim.Optimizer) -> int:
    """Restore from ``DIR/checkpoint.pt``; the step to continue from (0 if none)."""
    path = out / "checkpoint.pt"
    if not path.exists():
        return 0
    state = torch.load(path, map_location="cpu", weights_only=False)
    policy.model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    return int(state["step"])


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
    """Run ``cfg``; returns the metrics rows of the steps run (also in ``DIR/metrics.jsonl``)."""
    device = pick_device(cfg.device)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    policy = load_policy(cfg.model, seed=cfg.seed)
    policy.model.to(device)
    opt = torch.optim.AdamW(policy.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ref = copy.deepcopy(policy.model).eval().requires_grad_(False) if cfg.kl_beta > 0 else None
    start = load_checkpoint(out, policy, opt) if cfg.resume else 0
    if not cfg.resume:
        (out / "metrics.jsonl").unlink(missing_ok=True)
    keep_before(out, start)
    (out / "config.json").write_text(__import__("json").dumps(cfg.to_dict(), indent=1, default=str))
    settings = rollout_settings(cfg)
    rows: list[dict[str, Any]] = []
    threads = torch.get_num_threads()
    if cfg.workers > 0 and device.type == "cpu":
        # Leave the cores to the worker processes: idle OpenMP threads of the trainer spin
        # and starve them (measured: rollouts 10x slower on 2 cores).
        torch.set_num_threads(max(1, (os.cpu_count() or 1) - cfg.workers))
    with asyncio.Runner() as runner:
        pool: Pool = (
            MonarchPool(policy.name, cfg.env, settings, workers=cfg.workers, seed=cfg.seed, device=cfg.device)
            if cfg.workers > 0
            else LocalPool(policy, cfg.env, settings, seed=cfg.seed, device=cfg.device)
        )
        log = MetricsLog(out, cfg.steps, cfg.progress)
        rollouts = _Rollouts(runner, pool, cfg, policy)
        try:
            for step in range(start, cfg.steps):
                t0 = time.perf_counter()
                episodes, sync_s = rollouts.get(step)
                t1, t2 = t0 + sync_s, time.perf_counter()
                row = _score(cfg, step, episodes)
                fresh = [
                    e for e in episodes if e.reward is not None and _staleness(e, step) <= cfg.max_staleness
                ]
                adv, group_stats = advantages(cfg, episodes)
                row.update(group_stats)
                stats: dict[str, float] = {}
                if fresh and sum(sum(e.mask) for e in fresh) > 0:
                    stats = update(cfg, policy, ref, opt, fresh, adv, device)
                t3 = time.perf_counter()
                row.update(stats)
                sampled = sum(sum(e.mask) for e in episodes if e.reward is not None)
                row.update(
                    weight_sync_s=t1 - t0,
                    rollout_s=t2 - t1,
                    train_s=t3 - t2,
                    step_time_s=t3 - t0,
                    gen_tokens_per_s=sampled / max(t2 - t1, 1e-9),
                    train_tokens_per_s=sum(len(e.tokens) for e in fresh) / max(t3 - t2, 1e-9),
                    episodes_per_s=row["episodes"] / max(t2 - t1, 1e-9),
                    staleness_max=max((_staleness(e, step) for e in fresh), default=0),
                )
                log.write(row)
                rows.append(row)
                if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                    save_checkpoint(out, policy, opt, step + 1, cfg)
        finally:
            log.close()
            runner.run(pool.close())
            torch.set_num_threads(threads)
    return rows


class _Rollouts:
    """Rollouts step by step; with ``max_staleness >= 1`` one step ahead.

    Pipelined, the rollout of step ``s + 1`` is started (with the weights of version
    ``s``) before the update of step ``s``, so Monarch workers sample while the trainer
    trains; step ``s + 1`` then trains on episodes one version old, with the ratio taken
    against the sampler's logprobs. An in-process pool has nothing to overlap with and
    runs each rollout when it is started.
    """

    def __init__(self, runner: asyncio.Runner, pool: Pool, cfg: TrainConfig, policy: Policy) -> None:
        self.runner, self.pool, self.cfg, self.policy = runner, pool, cfg, policy
        self.pending: tuple[int, Any] | None = None

    def _start(self, step: int, version: int) -> float:
        t0 = time.perf_counter()
        self.runner.run(self.pool.sync(self.policy, version))
        sync_s = time.perf_counter() - t0
        groups = [(g, task_seed(self.cfg, step, g)) for g in range(self.cfg.prompts_per_step)]
        if isinstance(self.pool, LocalPool):
            self.pending = (step, self.runner.run(self.pool.rollout(step, groups)))
        else:
            task = self.runner.get_loop().create_task(self.pool.rollout(step, groups))
            self.runner.run(asyncio.sleep(0))  # let it send its calls to the workers
            self.pending = (step, task)
        return sync_s

    async def _wait(self, task: asyncio.Task[list[Episode]]) -> list[Episode]:
        return await task

    def get(self, step: int) -> tuple[list[Episode], float]:
        """The episodes of ``step`` and the seconds spent sending weights."""
        sync_s = self._start(step, step) if self.pending is None or self.pending[0] != step else 0.0
        assert self.pending is not None
        result = self.pending[1]
        self.pending = None
        episodes = result if isinstance(result, list) else self.runner.run(self._wait(result))
        if self.cfg.max_staleness >= 1 and step + 1 < self.cfg.steps:
            sync_s += self._start(step + 1, step)
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
