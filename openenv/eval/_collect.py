"""``openenv collect``: upstream OpenEnv 0.10's rollout collection, played by our eval runner.

Upstream's command collects ``N`` episodes of one env variant (``reasoning_gym:chain_sum``)
from a running server with a teacher (``scripted``, ``openai``, ``anthropic`` or any
OpenAI-compatible endpoint) into ``results.jsonl`` (one ``EpisodeRecord`` a line, the
``messages`` column ready for TRL's ``SFTTrainer``) and ``metadata.json``. Here the
episodes are a run of ``openenv eval`` (``run_eval``: concurrency, retries, timeouts,
resume by pair), one task per episode id (``{prefix}-{index:06d}``, its reset seed the
index), and each finished one is appended to ``results.jsonl`` as upstream's record
(``to_upstream``). The run's own files (``trajectories.jsonl``, ``run.json``,
``results.json``) sit beside it, so ``openenv eval report|rescore|export`` work on the
folder too.

Env specs: ``reasoning_gym:DATASET`` resets with ``family=DATASET`` and
``config=--dataset-config``; any other ``NAME:VARIANT`` resets with ``task_id=VARIANT``
(the env's own name for a task); a bare ``NAME`` plays the env by seed. The scripted
teacher plays the first legal action where the observation lists ``legal_actions``
(upstream's, for OpenSpiel), else the ``random`` baseline's action.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._exceptions import EvalError
from ..harness.collect import CollectResult, EpisodeRecord, RolloutSerializer
from ..policy import Agent, Decision, Episode, Policy
from ..policy._baselines import RandomPolicy
from ._export import to_upstream
from ._runner import RESULTS_FILE, RUN_FILE, EvalConfig, run_eval, write_results
from ._tasks import TaskRef
from ._trajectory import FILE, Trajectory, iter_trajectories

PROVIDERS = ("scripted", "openai", "anthropic")
_KEYS = {"openai": ("OPENAI_API_KEY", "API_KEY"), "anthropic": ("ANTHROPIC_API_KEY", "API_KEY")}


@dataclass
class CollectConfig:
    """Upstream ``openenv collect``'s options (``concurrency``: episodes in flight, ours)."""

    env: str
    base_url: str
    output_dir: str | Path
    num_episodes: int = 10
    max_turns: int = 9
    episode_id_prefix: str = "ep"
    resume: bool = True
    provider: str = "scripted"
    model: str | None = None
    llm_endpoint: str | None = None
    llm_port: int | None = None
    temperature: float = 0.2
    max_tokens: int = 200
    keep_losses: bool = False
    dataset_config: dict[str, Any] | None = None
    system_prompt: str | None = None
    concurrency: int = 8
    extra_metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def uses_llm(self) -> bool:
        return self.llm_endpoint is not None or self.provider != "scripted"

    @property
    def provider_label(self) -> str:
        return "openai-compatible" if self.llm_endpoint is not None else self.provider


def tasks_of(cfg: CollectConfig) -> list[TaskRef]:
    """One task per episode id; ``EvalError`` for a spec without a variant where one is needed."""
    family, _, variant = cfg.env.partition(":")
    if not family or (":" in cfg.env and not variant):
        raise EvalError(f"env {cfg.env!r}: use NAME:VARIANT (e.g. reasoning_gym:chain_sum) or a bare NAME")
    options: dict[str, Any] = {}
    if family == "reasoning_gym":
        options = {"family": variant, "config": dict(cfg.dataset_config or {})}
    elif variant:
        options = {"task_id": variant}
    elif cfg.dataset_config:
        raise EvalError("--dataset-config needs an env variant (reasoning_gym:DATASET)")
    return [
        TaskRef(id=f"{cfg.episode_id_prefix}-{i:06d}", category=variant, reset_options=options, reset_seed=i)
        for i in range(cfg.num_episodes)
    ]


def teacher(cfg: CollectConfig) -> Policy:
    """The policy upstream's ``--provider``/``--model``/``--llm-endpoint`` name."""
    if cfg.provider not in PROVIDERS:
        raise EvalError(f"--provider {cfg.provider!r} is not one of {', '.join(PROVIDERS)}")
    if not cfg.uses_llm:
        return ScriptedTeacher()
    if not cfg.model:
        raise EvalError("--model is required with a hosted provider or --llm-endpoint")
    sampling: dict[str, Any] = {
        "temperature": cfg.temperature,
        "max_tokens": cfg.max_tokens,
        "system": cfg.system_prompt,
    }
    if cfg.llm_endpoint is not None or cfg.provider == "openai":
        from ..policy._openai import OpenAIPolicy
        from ..rewards._llm import join_endpoint

        base_url = None if cfg.llm_endpoint is None else _endpoint(join_endpoint, cfg)
        key_env = _key_env("openai", base_url)
        return OpenAIPolicy(cfg.model, base_url=base_url, api_key_env=key_env, **sampling)
    from ..policy._anthropic import AnthropicPolicy

    return AnthropicPolicy(cfg.model, api_key_env=_key_env("anthropic", None), **sampling)


def _endpoint(join: Any, cfg: CollectConfig) -> str:
    try:
        return str(join(cfg.llm_endpoint, cfg.llm_port, "/v1"))
    except ValueError as exc:
        raise EvalError(f"--llm-endpoint: {exc}") from None


def _key_env(provider: str, base_url: str | None) -> str:
    names = _KEYS[provider]
    found = next((n for n in names if os.environ.get(n)), None)
    if found is None and base_url is None:
        raise EvalError(f"no API key for provider {provider!r}: set one of {', '.join(names)}")
    return found or names[0]


class ScriptedTeacher(RandomPolicy):
    """Upstream's scripted teacher: the first legal action (``action_id``) where the
    observation lists ``legal_actions``, else the ``random`` baseline."""

    name = "scripted"

    def agent(self, episode: Episode) -> Agent:
        return _Scripted(super().agent(episode), episode)


class _Scripted(Agent):
    def __init__(self, fallback: Agent, episode: Episode) -> None:
        self.fallback, self.episode = fallback, episode

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        legal = observation.get("legal_actions")
        tools = self.episode.actions.tools
        if not isinstance(legal, list) or not tools:
            return await self.fallback.act(observation, reward)
        args = {"action_id": int(legal[0]) if legal else 0}
        action = self.episode.actions.action_from_call(tools[0].name, args)
        return Decision(action, tool_calls=[{"name": tools[0].name, "arguments": args}])


def _move_aside(out: Path) -> None:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for name in ("results.jsonl", FILE, RUN_FILE, RESULTS_FILE):
        path = out / name
        if path.exists():
            stem, dot, suffix = name.partition(".")
            path.replace(out / f"{stem}.{stamp}.bak{dot}{suffix}")


def _record(t: Trajectory) -> EpisodeRecord:
    record = EpisodeRecord.from_dict(to_upstream(t))
    record.episode_id = t.task_id  # upstream's ids: one sample per episode
    return record


def collect(cfg: CollectConfig) -> CollectResult:
    """Collect ``cfg.num_episodes`` episodes into ``cfg.output_dir`` (see the module docstring)."""
    if cfg.num_episodes < 1:
        raise EvalError(f"--num-episodes must be at least 1, not {cfg.num_episodes}")
    tasks, policy = tasks_of(cfg), teacher(cfg)
    out = Path(cfg.output_dir)
    if not cfg.resume:
        _move_aside(out)
    serializer = RolloutSerializer(out)
    try:
        before = serializer.collected_episode_ids()
    except ValueError as exc:
        raise EvalError(str(exc)) from None
    played = {t.key for t in iter_trajectories(out / FILE) if t.status != "error"}
    serializer.write_metadata(
        {
            "env": cfg.env,
            "env_base_url": cfg.base_url,
            "provider": cfg.provider_label,
            "model": cfg.model,
            "llm_endpoint": cfg.llm_endpoint,
            "llm_port": cfg.llm_port if cfg.llm_endpoint else None,
            "num_episodes_requested": cfg.num_episodes,
            "temperature": cfg.temperature,
            "keep_losses": cfg.keep_losses,
            **cfg.extra_metadata,
        }
    )
    todo = [t for t in tasks if t.id not in before]
    kept: list[float] = []
    counts = {"dropped": 0, "failed": 0}

    def finished(t: Trajectory) -> None:
        if t.status == "error":
            counts["failed"] += 1
        elif not cfg.keep_losses and t.reward < 0.0:
            counts["dropped"] += 1
        else:
            serializer.write_episode(_record(t))
            kept.append(t.reward)

    if todo:
        run_eval(
            EvalConfig(
                env=cfg.base_url,
                policy=policy,
                out=out,
                tasks=todo,
                concurrency=cfg.concurrency,
                max_turns=cfg.max_turns,
                resume=True,
            ),
            on_trajectory=finished,
        )
        write_results(out, tasks=[t.id for t in tasks], samples=1)  # results.json: every episode so far
    skipped = len(tasks) - len(todo) + sum((t.id, 0) in played for t in todo)
    return CollectResult(
        num_collected=len(kept),
        num_skipped=skipped,
        num_dropped=counts["dropped"],
        num_failed=counts["failed"],
        episode_ids=[t.id for t in tasks],
        avg_reward=sum(kept) / len(kept) if kept else 0.0,
        success_rate=sum(r > 0 for r in kept) / len(kept) if kept else 0.0,
    )


def summary_lines(result: CollectResult) -> list[str]:
    """What upstream prints when a collection ends."""
    return [
        f"Collected={result.num_collected} skipped={result.num_skipped} "
        f"dropped={result.num_dropped} failed={result.num_failed}",
        f"avg_reward={result.avg_reward:.3f} success_rate={result.success_rate:.0%}",
    ]


def parse_dataset_config(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise EvalError(f"--dataset-config must be valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise EvalError("--dataset-config must be a JSON object")
    return value
