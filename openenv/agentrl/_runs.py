"""GRPO on captured agent runs: ``train_agent(cfg, tasks)`` (``openenv train --agent``).

The agent owns its loop; the trainer only starts it and reads what the capture proxy
recorded. Per step:

1. **Runs.** ``prompts_per_step`` tasks, ``group_size`` runs each, all at once. Each
   run gets a capture session of its own (its API key) and the env URL; the agent calls
   the model through the proxy, whose backend is the policy served by this process
   (``ServedPolicy``: ``openenv policy serve``'s app over the current weights).
2. **Rewards** come from the task's verifier (the agent submits at the end of its run).
   A run that failed (an error, past ``episode_timeout_s``, a trace not captured at the
   ``tokens`` level) has no reward and is left out, as a failed episode is.
3. **Batch.** Each run's ``TrainingTrace`` (upstream's schema 1: per call the backend's
   prompt ids, completion ids, logprobs, loss mask) becomes rows (``trace_episodes``):
   a call whose prompt extends a row's tokens continues that row (the ids in between,
   the tool output, train nothing); any other call starts a row. Nothing is re-tokenised.
4. **Update.** Group-relative advantages over each task's runs (``cfg.advantage``), every
   row of a run with its run's advantage, then the learner's own ``update``: the ratio is
   taken against the captured logprobs (the behaviour policy) and the loss covers only
   the completion tokens. ``logprob_gap`` in the metrics is the mean |learner - captured|
   logprob over them: it stays at float noise while the served weights are the learner's.
5. **Push.** The new weights go into the served model in place, before the next runs.

``DIR/metrics.jsonl`` has the trainer's columns where they apply (``reward_mean``,
``loss``, ``logprob_gap``, ...), plus ``runs``, ``rows``, ``push_s``; ``openenv train
plot DIR`` draws it; ``DIR/checkpoint.pt`` is what ``openenv policy serve DIR`` serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch

from ..train import Episode, TrainConfig, TrainingFailed
from ..train._learner import Learner
from ..train._metrics import MetricsLog, keep_before
from ._served import ServedPolicy
from ._simple import AgentRun, SimpleShellAgent

if TYPE_CHECKING:
    from ..capture import TrainingTrace

__all__ = ["AGENTS", "Agent", "AgentRunTrainer", "CapturedRun", "trace_episodes", "train_agent"]


class Agent(Protocol):
    """A loop-owning agent: one run on a task, given a model endpoint and an env."""

    name: str

    async def run(self, *, base_url: str, api_key: str, env_url: str, task_id: str) -> AgentRun: ...


def _simple(cfg: TrainConfig) -> Agent:
    return SimpleShellAgent(
        max_turns=cfg.max_turns, max_tokens=cfg.max_new_tokens, temperature=cfg.temperature
    )


#: Agents by the name ``openenv train --agent`` takes: a factory from the run's config.
AGENTS = {"simple": _simple}


@dataclass
class CapturedRun:
    """One agent run, scored, with the rows its trace became."""

    group: int
    task_id: str
    reward: float | None
    rows: list[Episode]
    commands: list[str]
    trace: TrainingTrace | None = None
    error: str | None = None


def trace_episodes(trace: TrainingTrace, *, group: int, session: str, version: int) -> list[Episode]:
    """A run's ``TrainingTrace`` as token rows for the learner, ids and logprobs as captured.

    Each turn's prompt ids go in with mask 0 (a turn that continues a row adds only the
    ids past the row's end); its completion ids with the turn's own loss mask and the
    captured logprob of each, at policy ``version``.
    """
    rows: list[Episode] = []
    for turn in trace.turns:
        prompt, completion = turn.prompt_token_ids, turn.completion_token_ids
        row = next((r for r in rows if r.tokens == prompt[: len(r.tokens)]), None)
        if row is None:
            row = Episode(group, 0, session)
            rows.append(row)
        row.append_env(prompt[len(row.tokens) :])
        row.tokens += completion
        row.mask += turn.loss_mask[len(prompt) :]
        row.logprobs += turn.per_token_logps
        row.versions += [version] * len(completion)
        row.turns += 1
    return rows


def _check(cfg: TrainConfig, tasks: Sequence[str]) -> None:
    if not tasks:
        raise ValueError("training on agent runs needs at least one task (--task ID)")
    if len(cfg.env) != 1:
        raise ValueError("training on agent runs takes one --env: the URL of the env the agent works in")
    if cfg.workers or cfg.env_replicas:
        raise ValueError("training on agent runs serves the policy in this process: --workers 0, no replicas")
    if cfg.max_staleness:
        raise ValueError("training on agent runs is synchronous: max_staleness must be 0")
    if cfg.sampler == "vllm":
        raise ValueError("training on agent runs samples with the served policy ('hf'), not vLLM")


def train_agent(
    cfg: TrainConfig, tasks: Sequence[str], agent: Agent | str = "simple"
) -> list[dict[str, Any]]:
    """Train ``cfg.model`` with GRPO on runs of ``agent`` on ``tasks`` (ids of the env at
    ``cfg.env[0]``, taken in turn, ``cfg.prompts_per_step`` a step); the metrics rows.

    Raises:
        ValueError: a setting this loop does not take, or an unknown agent name.
        TrainingFailed: no run of a step was scored (after writing that step's row).
    """
    with AgentRunTrainer(cfg, tasks, agent) as trainer:
        out = Path(cfg.out)
        if not cfg.resume:
            (out / "metrics.jsonl").unlink(missing_ok=True)
        keep_before(out, trainer.start)
        (out / "config.json").write_text(
            json.dumps(
                {**cfg.to_dict(), "agent": trainer.agent.name, "tasks": list(tasks)}, indent=1, default=str
            )
        )
        rows: list[dict[str, Any]] = []
        log = MetricsLog(out, cfg.steps, cfg.progress, tensorboard=cfg.tensorboard, start=trainer.start)
        try:
            for step in range(trainer.start, cfg.steps):
                row = trainer.step(step)
                log.write(row)
                rows.append(row)
                if row["episodes"] == 0:
                    raise TrainingFailed(f"step {step}: no agent run was scored: {'; '.join(row['errors'])}")
                if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                    trainer.learner.save(step + 1)
        finally:
            log.close()
    return rows


class AgentRunTrainer:
    """The pieces of ``train_agent``, held open: the learner, the served policy, the
    capture proxy; ``step(s)`` runs, scores, trains and pushes once (its metrics row),
    and keeps that step's runs in ``runs``. A context manager."""

    def __init__(self, cfg: TrainConfig, tasks: Sequence[str], agent: Agent | str = "simple") -> None:
        _check(cfg, tasks)
        if isinstance(agent, str):
            if agent not in AGENTS:
                raise ValueError(f"unknown agent {agent!r}; one of {', '.join(sorted(AGENTS))}")
            agent = AGENTS[agent](cfg)
        self.cfg, self.tasks, self.agent = cfg, list(tasks), agent
        Path(cfg.out).mkdir(parents=True, exist_ok=True)
        self.learner = Learner(cfg)
        self.start = self.learner.restore()
        self.runs: list[CapturedRun] = []
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> AgentRunTrainer:
        from ..capture import CaptureServer

        try:
            self.served = self._stack.enter_context(
                ServedPolicy(self.cfg.model, seed=self.cfg.seed, device=self.cfg.device)
            )
            self.proxy = self._stack.enter_context(CaptureServer(llm_url=self.served.url + "/v1", port=0))
            self.runner = self._stack.enter_context(asyncio.Runner())
            self.served.push(self.learner.policy.model.state_dict(), version=self.start)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def step(self, step: int) -> dict[str, Any]:
        """Run, score, train and push once; the step's metrics row."""
        cfg = self.cfg
        t0 = time.perf_counter()
        picked = [
            self.tasks[(step * cfg.prompts_per_step + g) % len(self.tasks)]
            for g in range(cfg.prompts_per_step)
        ]
        self.runs = self.runner.run(self._runs(picked, step))
        t1 = time.perf_counter()
        batch, adv, zero_std = _batch(cfg, self.runs)
        row = _metrics(step, self.runs, batch, zero_std)
        if batch and sum(sum(e.mask) for e in batch) > 0:
            row.update(self.learner.update(batch, adv))
        t2 = time.perf_counter()
        self.served.push(self.learner.policy.model.state_dict(), version=step + 1)
        t3 = time.perf_counter()
        row.update(rollout_s=t1 - t0, train_s=t2 - t1, push_s=t3 - t2, step_time_s=t3 - t0)
        return row

    async def _runs(self, picked: list[str], step: int) -> list[CapturedRun]:
        """Every run of the step at once, each in a capture session of its own."""
        cfg, registry, version = self.cfg, self.proxy.registry, self.served.version
        sessions = [
            (g, task, registry.create(task=task, group=g, step=step, run=k))
            for g, task in enumerate(picked)
            for k in range(cfg.group_size)
        ]

        async def one(task: str, session_id: str) -> AgentRun:
            call = self.agent.run(
                base_url=self.proxy.url + "/v1", api_key=session_id, env_url=cfg.env[0], task_id=task
            )
            return await asyncio.wait_for(call, cfg.episode_timeout_s)

        results = await asyncio.gather(
            *(one(t, s.session_id) for _, t, s in sessions), return_exceptions=True
        )
        runs = []
        for (g, task, session), result in zip(sessions, results, strict=True):
            registry.delete(session.session_id)
            runs.append(_captured(g, task, session, result, version))
        return runs


def _captured(
    group: int, task: str, session: Any, result: AgentRun | BaseException, version: int
) -> CapturedRun:
    """A finished run with its trace as rows; failed (no reward) when the agent raised or
    the trace is not trainable."""
    from ..capture import NotTrainable, export_session, to_training_trace

    if isinstance(result, BaseException):
        if not isinstance(result, Exception):
            raise result
        error = "the run passed episode_timeout_s" if isinstance(result, TimeoutError) else str(result)
        return CapturedRun(group, task, None, [], [], None, f"{type(result).__name__}: {error}")
    try:
        trace = to_training_trace(session.graph, export_session(session))
    except NotTrainable as exc:
        return CapturedRun(group, task, None, [], result.commands, None, f"NotTrainable: {exc}")
    rows = trace_episodes(trace, group=group, session=session.session_id, version=version)
    return CapturedRun(group, task, result.reward, rows, result.commands, trace)


def _batch(cfg: TrainConfig, runs: list[CapturedRun]) -> tuple[list[Episode], list[float], float]:
    """The rows of the scored runs and each row's advantage (its run's, from its group);
    the fraction of groups whose scored runs all got the same reward."""
    batch: list[Episode] = []
    adv: list[float] = []
    groups: dict[int, list[CapturedRun]] = {}
    for r in runs:
        groups.setdefault(r.group, []).append(r)
    flat = counted = 0
    for members in groups.values():
        rewards = torch.tensor([float("nan") if r.reward is None else r.reward for r in members])
        for r, a in zip(members, cfg.advantage(rewards).tolist(), strict=True):
            if r.reward is not None:
                batch += r.rows
                adv += [a] * len(r.rows)
        valid = rewards[~torch.isnan(rewards)]
        if len(valid) >= 2:
            counted += 1
            flat += int(bool((valid == valid[0]).all()))
    return batch, adv, flat / counted if counted else float("nan")


def _metrics(step: int, runs: list[CapturedRun], batch: list[Episode], zero_std: float) -> dict[str, Any]:
    rewards = [r.reward for r in runs if r.reward is not None]
    return {
        "step": step,
        "reward_mean": statistics.fmean(rewards) if rewards else float("nan"),
        "reward_std": statistics.pstdev(rewards) if rewards else float("nan"),
        "episodes": len(rewards),
        "failed": len(runs) - len(rewards),
        "rows": len(batch),
        "tokens": sum(sum(e.mask) for e in batch),
        "context_tokens": sum(len(e.tokens) for e in batch),
        "turns_mean": statistics.fmean(sum(e.turns for e in r.rows) for r in runs if r.reward is not None)
        if rewards
        else float("nan"),
        "frac_zero_std": zero_std,
        "errors": sorted({r.error for r in runs if r.error})[:3],
    }
