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

Resume is upstream's: an episode counts as collected once it is in ``results.jsonl``,
so a dropped one (a loss) or a failed one is played again by the next run. A failed one
is played again as it was (the runner's resume); a dropped one is played as the pair's
next sample, with a reset seed of its own (the runner's seed of that pair: attempt 0
resets with the index, attempt 1 with another seed, ...), so a replay can turn out
otherwise, as upstream's unseeded replays do.

Env specs: ``reasoning_gym:DATASET`` resets with ``family=DATASET`` and
``config=--dataset-config``; ``openspiel:GAME`` resets with nothing (the server plays
the game it was started with, as upstream's OpenSpiel server does) and puts
``game_name=GAME`` into every action that has that field; any other ``NAME:VARIANT``
resets with ``task_id=VARIANT`` (the env's own name for a task); a bare ``NAME`` plays
the env by seed. The scripted teacher plays the first legal action where the observation
lists ``legal_actions`` (upstream's, for OpenSpiel), else the ``random`` baseline's action.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._exceptions import EvalError
from ..harness.collect import CollectResult, EpisodeRecord, RolloutSerializer
from ..policy import Agent, Decision, Episode, Policy
from ..policy._baselines import RandomPolicy
from ..policy._space import observation_text
from ._export import to_upstream
from ._runner import RESULTS_FILE, RUN_FILE, EvalConfig, latest_by_pair, run_eval, write_results
from ._tasks import TaskRef
from ._trajectory import FILE, Trajectory

PROVIDERS = ("scripted", "openai", "anthropic")
_KEYS = {"openai": ("OPENAI_API_KEY", "API_KEY"), "anthropic": ("ANTHROPIC_API_KEY", "API_KEY")}


@dataclass
class CollectConfig:
    """Upstream ``openenv collect``'s options (``concurrency``, episodes in flight, and
    ``progress`` are ours)."""

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
    concurrency: int = 1  # one at a time, as upstream: many upstream envs serve one session
    progress: bool = False  # a progress bar on stderr (the CLI's, where stderr is a terminal)
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
    elif family == "openspiel":
        pass  # the server plays the game it was started with; the actions name it (teacher())
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
    policy = _llm_teacher(cfg) if cfg.uses_llm else ScriptedTeacher()
    family, _, variant = cfg.env.partition(":")
    return FixedFields(policy, {"game_name": variant}) if family == "openspiel" and variant else policy


def _llm_teacher(cfg: CollectConfig) -> Policy:
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


class FixedFields(Policy):
    """``policy`` with ``fields`` set in each action whose schema has them (upstream's
    OpenSpiel actions carry ``game_name``)."""

    def __init__(self, policy: Policy, fields: Mapping[str, Any]) -> None:
        self.policy, self.fields, self.name = policy, dict(fields), policy.name

    async def check(self) -> None:
        await self.policy.check()

    async def aclose(self) -> None:
        await self.policy.aclose()

    def agent(self, episode: Episode) -> Agent:
        return _FixedAgent(self.policy.agent(episode), self.fields, episode)


class _FixedAgent(Agent):
    def __init__(self, agent: Agent, fields: dict[str, Any], episode: Episode) -> None:
        known = set(episode.actions.schema.get("properties", {}))
        self.agent, self.fields = agent, {k: v for k, v in fields.items() if k in known}

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        decision = await self.agent.act(observation, reward)
        if decision.action is not None and self.fields:
            decision.action = {**decision.action, **self.fields}
        return decision


class _Scripted(Agent):
    """Its transcript is a tool-calling chat, as an LLM teacher's: the first observation
    as the user's message, each later one as the result of the call before it."""

    def __init__(self, fallback: Agent, episode: Episode) -> None:
        self.fallback, self.episode = fallback, episode
        self.pending: str | None = None  # the id of the call the next observation answers
        self.turn = 0

    async def act(self, observation: Mapping[str, Any], reward: float | None) -> Decision:
        legal = observation.get("legal_actions")
        tools = self.episode.actions.tools
        if not isinstance(legal, list) or not tools:
            return await self.fallback.act(observation, reward)
        tool, args = tools[0].name, {"action_id": int(legal[0]) if legal else 0}
        action = self.episode.actions.action_from_call(tool, args)
        shown = observation_text(observation)
        messages: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": self.pending, "name": tool, "content": shown}
            if self.pending
            else {"role": "user", "content": shown}
        ]
        self.turn += 1
        self.pending = f"call_{self.turn}"
        call = {"name": tool, "arguments": json.dumps(args)}
        wire = {"id": self.pending, "type": "function", "function": call}
        text = f"action_id {args['action_id']}: the first legal action"
        messages.append({"role": "assistant", "content": text, "tool_calls": [wire]})
        return Decision(action, messages=messages, tool_calls=[{"name": tool, "arguments": args}])


def _move_aside(out: Path) -> list[tuple[Path, Path]]:
    """``--no-resume``: the folder's files renamed ``NAME.STAMP[.N].bak.EXT`` (upstream's
    names; ``.N`` where that name is taken); returns what went where."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    moved = []
    for name in ("results.jsonl", FILE, RUN_FILE, RESULTS_FILE):
        path = out / name
        if not path.exists():
            continue
        stem, dot, suffix = name.partition(".")
        target, n = out / f"{stem}.{stamp}.bak{dot}{suffix}", 0
        while target.exists():
            n += 1
            target = out / f"{stem}.{stamp}.{n}.bak{dot}{suffix}"
        path.replace(target)
        moved.append((path, target))
    return moved


def _record(t: Trajectory) -> EpisodeRecord:
    record = EpisodeRecord.from_dict(to_upstream(t))
    record.episode_id = t.task_id  # upstream's ids: one record per episode id
    last = record.messages[-1] if record.messages else {}
    calls = last.get("tool_calls") if last.get("role") == "assistant" else None
    if calls and t.final_observation is not None:  # the last call's result ends the chat, as upstream's
        call = calls[0]
        name, shown = call.get("function", {}).get("name"), observation_text(t.final_observation)
        answer = {"role": "tool", "tool_call_id": call.get("id"), "name": name, "content": shown}
        record.messages.append(answer)
    return record


def _next_samples(out: Path, tasks: list[TaskRef]) -> dict[str, int]:
    """For each task, the first sample not yet played to an end (0, or past a dropped one)."""
    ended = {key for key, t in latest_by_pair(out / FILE).items() if t.status != "error"}
    nxt = {}
    for task in tasks:
        n = 0
        while (task.id, n) in ended:
            n += 1
        nxt[task.id] = n
    return nxt


def _fix_run_file(out: Path, ids: list[str], samples: int) -> None:
    """run.json names every episode of the collection (each run_eval wrote only its own)."""
    path = out / RUN_FILE
    record = json.loads(path.read_text())
    record["tasks"], record["samples"] = ids, samples
    path.write_text(json.dumps(record, indent=2))


def _check_resumable(out: Path, policy: Policy, cfg: CollectConfig) -> None:
    """A resume goes on with the teacher and turn limit the folder was collected with
    (checked before anything is written; the runner would refuse it later)."""
    path = out / RUN_FILE
    if not path.is_file():
        return
    old = json.loads(path.read_text())
    for key, now in (("policy", policy.name), ("max_turns", cfg.max_turns)):
        if old.get(key) != now:
            raise EvalError(
                f"{out} holds episodes collected with {key}={old.get(key)!r}, not {now!r}: "
                "pass --no-resume (the old files are moved aside) or another --output-dir"
            )


def collect(cfg: CollectConfig, *, echo: Callable[[str], None] | None = None) -> CollectResult:
    """Collect ``cfg.num_episodes`` episodes into ``cfg.output_dir`` (see the module
    docstring); ``echo`` gets a line for each failed episode and for each file
    ``--no-resume`` moved aside."""
    say = echo or (lambda line: None)
    if cfg.num_episodes < 1:
        raise EvalError(f"--num-episodes must be at least 1, not {cfg.num_episodes}")
    tasks, policy = tasks_of(cfg), teacher(cfg)
    out = Path(cfg.output_dir)
    if cfg.resume:
        _check_resumable(out, policy, cfg)
    else:
        for old, new in _move_aside(out):
            say(f"resume=False moved {old} to {new}")
    serializer = RolloutSerializer(out)
    try:
        before = serializer.collected_episode_ids()
    except ValueError as exc:
        raise EvalError(str(exc)) from None
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
    by_sample: dict[int, list[TaskRef]] = {}
    nxt = _next_samples(out, todo)
    for t in todo:  # a replay resets with its pair's own seed, not the index
        replay = dataclasses.replace(t, reset_seed=None)
        by_sample.setdefault(nxt[t.id], []).append(t if nxt[t.id] == 0 else replay)
    kept: list[float] = []
    counts = {"dropped": 0, "failed": 0}

    def finished(t: Trajectory) -> None:
        if t.status == "error":
            counts["failed"] += 1
            say(f"failed {t.task_id}: {t.error}")
        elif not cfg.keep_losses and t.reward < 0.0:
            counts["dropped"] += 1
        else:
            serializer.write_episode(_record(t))
            kept.append(t.reward)

    for sample, group in sorted(by_sample.items()):  # first tries, then replays of dropped ones
        run_eval(
            EvalConfig(
                env=cfg.base_url,
                policy=policy,
                out=out,
                tasks=group,
                samples=sample + 1,  # the pairs below ``sample`` ended already: not played again
                concurrency=cfg.concurrency,
                max_turns=cfg.max_turns,
                resume=True,
                progress=cfg.progress,
            ),
            on_trajectory=finished,
        )
    if todo:
        _fix_run_file(out, [t.id for t in tasks], max(by_sample) + 1)
        write_results(out, tasks=[t.id for t in tasks])  # results.json: every attempt so far
    return CollectResult(
        num_collected=len(kept),
        num_skipped=len(tasks) - len(todo),
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
