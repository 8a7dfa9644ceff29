"""A run: every (task, sample) pair of a selection, played at a concurrency, each
trajectory appended to ``OUT/trajectories.jsonl`` as it ends.

* ``resume``: pairs already in the folder are not played again (a pair whose record
  is an error is: the last record of a pair is the one that counts).
* transient errors (the env connection, a busy or full server, a model server's
  timeout, 429 or 5xx) restart the episode after a backoff, up to ``retries`` times,
  and are counted; other errors end the episode as ``error`` with the message.
* each episode has a deadline (``episode_timeout_s``): past it, ``timeout``, scored
  as a failure (reward 0, not passed) and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._exceptions import (
    CapacityReached,
    EvalError,
    PolicyError,
    SessionBusy,
    TransportError,
)
from ..client import AsyncEnvClient
from ..policy import ActionSpace, Episode, Policy, is_transient, policy_from_spec
from ._env import EnvHandle, open_env
from ._episode import Clock, EpisodeSpec, play
from ._metrics import PassRule, summarize
from ._progress import Progress
from ._tasks import TaskRef, TaskSelection, select_tasks
from ._trajectory import FILE, Trajectory, TrajectoryWriter, iter_trajectories

RUN_FILE = "run.json"
RESULTS_FILE = "results.json"


@dataclass
class EvalConfig:
    """Everything a run needs; ``openenv eval run`` builds one from its flags."""

    env: str
    policy: str | Policy
    out: str | Path
    split: str | None = None
    ids: Sequence[str] = ()
    count: int | None = None
    samples: int = 1
    concurrency: int = 8
    max_turns: int = 30
    episode_timeout_s: float = 600.0
    retries: int = 3
    backoff_s: float = 0.5
    seed: int = 0
    resume: bool = False
    pass_rule: PassRule = field(default_factory=PassRule)
    env_kwargs: dict[str, Any] | None = None
    progress: bool = False
    tasks: Sequence[TaskRef] | None = None  # the tasks as given (their own reset options), not selected

    def check(self) -> None:
        if self.samples < 1:
            raise EvalError(f"k (samples per task) must be at least 1, not {self.samples}")
        if self.concurrency < 1:
            raise EvalError(f"the concurrency must be at least 1, not {self.concurrency}")
        if self.max_turns < 1:
            raise EvalError(f"max turns must be at least 1, not {self.max_turns}")
        if self.episode_timeout_s <= 0:
            raise EvalError(f"the episode timeout must be positive, not {self.episode_timeout_s}")
        if self.retries < 0:
            raise EvalError(f"retries must be 0 or more, not {self.retries}")


def episode_seed(seed: int, task_id: str, sample: int) -> int:
    """The seed of one pair: the same for the same run seed, task and sample."""
    digest = hashlib.sha256(f"{seed}\0{task_id}\0{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, (TransportError, CapacityReached, SessionBusy, ConnectionError)):
        return True
    return not isinstance(exc, PolicyError) and is_transient(exc)


def latest_by_pair(path: Path) -> dict[tuple[str, int], Trajectory]:
    """The last record of each (task, sample) pair of a trajectories file."""
    return {t.key: t for t in iter_trajectories(path)}


class _Run:
    def __init__(self, cfg: EvalConfig, env: EnvHandle, policy: Policy, out: Path, run_id: str) -> None:
        self.cfg, self.env, self.policy, self.out, self.run_id = cfg, env, policy, out, run_id
        self.actions = ActionSpace.from_schema(env.schema)
        self.writer = TrajectoryWriter(out / FILE)
        self.progress: Progress | None = None

    def spec(self, task: TaskRef, sample: int) -> EpisodeSpec:
        seed = episode_seed(self.cfg.seed, task.id, sample)
        return EpisodeSpec(
            run_id=self.run_id,
            env=self.env.name,
            env_version=self.env.version,
            task_id=task.id,
            split=task.split,
            category=task.category,
            sample=sample,
            seed=seed,
            reset_options=dict(task.reset_options),
            reset_seed=task.reset_seed if task.reset_seed is not None else seed,
        )

    def client(self) -> AsyncEnvClient[Any, Any, Any]:
        return AsyncEnvClient(
            self.env.base_url, headers=self.env.headers, timeout_s=self.cfg.episode_timeout_s
        )

    async def worker(self, queue: asyncio.Queue[tuple[TaskRef, int]]) -> None:
        client = self.client()
        try:
            while not queue.empty():
                task, sample = queue.get_nowait()
                trajectory, client = await self.episode(client, task, sample)
                self.writer.write(trajectory)
                if self.progress is not None:
                    self.progress.advance(trajectory)
        finally:
            await client.close()

    async def episode(
        self, client: AsyncEnvClient[Any, Any, Any], task: TaskRef, sample: int
    ) -> tuple[Trajectory, AsyncEnvClient[Any, Any, Any]]:
        spec = self.spec(task, sample)
        episode = Episode(
            self.env.name, task.id, task.data, spec.seed, sample, self.actions, self.cfg.max_turns
        )
        started, wall0 = time.time(), time.perf_counter()
        retries = 0
        while True:
            clock = Clock()
            try:
                async with asyncio.timeout(self.cfg.episode_timeout_s):
                    trajectory = await play(client, self.policy, episode, spec, clock)
                break
            except TimeoutError:
                trajectory = self.failed(
                    spec, "timeout", f"timeout: over {self.cfg.episode_timeout_s:g} s", clock
                )
                client = await self.reconnect(client)
                break
            except Exception as exc:
                if _transient(exc) and retries < self.cfg.retries:
                    retries += 1
                    client = await self.reconnect(client)
                    await asyncio.sleep(self.cfg.backoff_s * 2 ** (retries - 1))
                    continue
                trajectory = self.failed(spec, "error", f"{type(exc).__name__}: {exc}", clock)
                if _transient(exc):
                    client = await self.reconnect(client)
                break
        trajectory.retries, trajectory.attempts = retries, retries + 1
        trajectory.wall_s, trajectory.started_at = time.perf_counter() - wall0, started
        trajectory.passed = trajectory.status != "error" and self.cfg.pass_rule.passed(
            trajectory.reward, trajectory.success
        )
        return trajectory, client

    async def reconnect(self, client: AsyncEnvClient[Any, Any, Any]) -> AsyncEnvClient[Any, Any, Any]:
        with contextlib.suppress(Exception):  # a broken connection may fail to close: dropped either way
            await client.close()
        return self.client()

    def failed(self, spec: EpisodeSpec, status: str, error: str, clock: Clock) -> Trajectory:
        return Trajectory(
            run_id=self.run_id,
            env=spec.env,
            env_version=spec.env_version,
            policy=self.policy.name,
            task_id=spec.task_id,
            split=spec.split,
            category=spec.category,
            sample=spec.sample,
            seed=spec.seed,
            status=status,
            error=error,
            policy_s=clock.policy_s,
            env_s=clock.env_s,
        )


def _run_record(
    cfg: EvalConfig, env: EnvHandle, policy: Policy, tasks: list[TaskRef], run_id: str
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "env_target": cfg.env,
        "env": env.name,
        "env_version": env.version,
        "policy": policy.name,
        "seed": cfg.seed,
        "samples": cfg.samples,
        "max_turns": cfg.max_turns,
        "tasks": [t.id for t in tasks],
        "pass_rule": asdict(cfg.pass_rule),
    }


def _prepare_folder(out: Path, record: dict[str, Any], resume: bool) -> str:
    """The run id to use; ``EvalError`` for a folder that holds another run."""
    run_file = out / RUN_FILE
    if not run_file.is_file():
        if (out / FILE).is_file():
            raise EvalError(f"{out} holds trajectories but no {RUN_FILE}: not a folder of `openenv eval`")
        return str(record["run_id"])
    old = json.loads(run_file.read_text())
    if not resume:
        raise EvalError(f"{out} already holds a run: pass --resume to finish it, or choose another --out")
    for key in ("env", "policy", "seed", "max_turns"):
        if old.get(key) != record.get(key):
            raise EvalError(
                f"{out} holds a run with {key}={old.get(key)!r}, not {record.get(key)!r}: another --out"
            )
    return str(old["run_id"])


def _open_folder(
    out: Path, cfg: EvalConfig, env: EnvHandle, policy: Policy, tasks: list[TaskRef]
) -> tuple[dict[str, Any], set[tuple[str, int]]]:
    """Make or reopen the run folder: its record and the pairs it already holds."""
    out.mkdir(parents=True, exist_ok=True)
    record = _run_record(cfg, env, policy, tasks, uuid.uuid4().hex[:12])
    record["run_id"] = _prepare_folder(out, record, cfg.resume)
    done = {k for k, t in latest_by_pair(out / FILE).items() if t.status != "error"}
    (out / RUN_FILE).write_text(json.dumps(record, indent=2))
    return record, done


async def run_eval_async(
    cfg: EvalConfig, *, on_trajectory: Callable[[Trajectory], None] | None = None
) -> dict[str, Any]:
    """Run ``cfg``; returns the results (also written to ``OUT/results.json``)."""
    cfg.check()
    policy = policy_from_spec(cfg.policy) if isinstance(cfg.policy, str) else cfg.policy
    try:
        await policy.check()
        selection = TaskSelection(cfg.split, tuple(cfg.ids), cfg.count)
        with open_env(cfg.env, env_kwargs=cfg.env_kwargs, max_sessions=cfg.concurrency + 8) as env:
            tasks = list(cfg.tasks) if cfg.tasks is not None else await asyncio.to_thread(
                select_tasks, env, selection
            )
            out = Path(cfg.out)
            record, done = await asyncio.to_thread(_open_folder, out, cfg, env, policy, tasks)
            queue: asyncio.Queue[tuple[TaskRef, int]] = asyncio.Queue()
            for task in tasks:
                for sample in range(cfg.samples):
                    if (task.id, sample) not in done:
                        queue.put_nowait((task, sample))
            run = _Run(cfg, env, policy, out, record["run_id"])
            run.progress = Progress(queue.qsize(), enabled=cfg.progress)
            run.progress.listener = on_trajectory
            try:
                workers = [run.worker(queue) for _ in range(min(cfg.concurrency, max(queue.qsize(), 1)))]
                await asyncio.gather(*workers)
            finally:
                run.writer.close()
                run.progress.close()
    finally:
        await policy.aclose()
    return write_results(out, cfg.pass_rule, tasks=[t.id for t in tasks], samples=cfg.samples)


def write_results(
    out: Path,
    pass_rule: PassRule | None = None,
    *,
    tasks: Sequence[str] | None = None,
    samples: int | None = None,
) -> dict[str, Any]:
    """Summarize a run folder's trajectories into ``results.json`` (the last record of
    each pair; ``tasks``/``samples`` keep only the pairs of this selection)."""
    latest = latest_by_pair(out / FILE)
    chosen = [
        t
        for t in latest.values()
        if (tasks is None or t.task_id in tasks) and (samples is None or t.sample < samples)
    ]
    if pass_rule is not None:
        for t in chosen:
            t.passed = t.status != "error" and pass_rule.passed(t.reward, t.success)
    results = summarize(chosen)
    tmp = out / (RESULTS_FILE + ".tmp")
    tmp.write_text(json.dumps(results, indent=2, default=str))
    os.replace(tmp, out / RESULTS_FILE)
    return results


def run_eval(cfg: EvalConfig, **kwargs: Any) -> dict[str, Any]:
    """``run_eval_async`` from sync code; inside a running event loop (a notebook) the
    run gets a thread and a loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_eval_async(cfg, **kwargs))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-eval") as pool:
        return pool.submit(asyncio.run, run_eval_async(cfg, **kwargs)).result()
