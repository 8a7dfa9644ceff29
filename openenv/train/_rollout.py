"""Multi-turn rollouts over the protocol, many sessions per connection.

A *group* is G episodes of one task (one reset seed). Groups bound for one env URL share
one ``AsyncEnvClient`` connection and advance in lockstep: one ``batch`` frame resets
all their sessions, then each turn the policy samples an action for every live episode
and one ``batch`` frame steps them all. At most ``max_sessions`` sessions are open per
connection; every env call and every wave of episodes has a deadline, a failed episode
has ``reward=None``, and every session is closed on every path.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .._exceptions import OpenEnvError
from ._model import Policy
from ._sampler import sample
from ._text import TextEnv


@dataclass
class Episode:
    """One trajectory, token-in/token-out.

    ``tokens`` is the whole conversation; ``mask[i]`` is 1 where the policy sampled
    ``tokens[i]`` (0 on prompt and env replies); ``logprobs[i]`` and ``versions[i]`` are
    the sampler's log-probability and policy version for sampled tokens (0.0 and -1
    elsewhere). ``reward`` is ``None`` when the episode failed.
    """

    group: int
    seed: int
    session: str
    tokens: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    reward: float | None = 0.0
    turns: int = 0
    truncated: bool = False
    finished: bool = False
    error: str | None = None
    env_latency_s: list[float] = field(default_factory=list)

    def append_env(self, ids: list[int]) -> None:
        self.tokens += ids
        self.mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.versions += [-1] * len(ids)

    def append_policy(self, ids: list[int], logprobs: list[float], version: int) -> None:
        self.tokens += ids
        self.mask += [1] * len(ids)
        self.logprobs += logprobs
        self.versions += [version] * len(ids)

    def fail(self, error: str) -> None:
        self.reward, self.error = None, error

    @property
    def live(self) -> bool:
        """Still being played: not failed and not finished."""
        return self.error is None and not self.finished


@dataclass(frozen=True)
class RolloutSettings:
    """What a rollout worker needs from the trainer's config."""

    group_size: int
    max_turns: int
    max_new_tokens: int
    max_tokens: int
    temperature: float
    max_sessions: int
    env_timeout_s: float
    episode_timeout_s: float
    observation_adapter: Callable[[Mapping[str, Any]], str] | None = None
    action_adapter: Callable[[str], dict[str, Any]] | None = None


def _observation(result: Any) -> tuple[dict[str, Any], float, bool, bool]:
    """(observation dict, reward, done, truncated) of one batch item; raises its error."""
    if isinstance(result, BaseException):
        raise result
    obs = result.observation if isinstance(result.observation, dict) else result.observation.model_dump()
    return obs, float(result.reward or 0.0), result.done, result.truncated


async def run_wave(
    client: Any,
    text: TextEnv,
    policy: Policy,
    groups: Sequence[tuple[int, int]],
    cfg: RolloutSettings,
    *,
    version: int,
    generator: torch.Generator,
    device: torch.device,
) -> list[Episode]:
    """Play the episodes of ``groups`` (``(group index, seed)``) on one connection."""
    episodes = [Episode(g, seed, f"g{g}-{k}") for g, seed in groups for k in range(cfg.group_size)]
    opened: list[str] = []
    try:
        async with asyncio.timeout(cfg.episode_timeout_s):
            await _play(client, text, policy, episodes, opened, cfg, version, generator, device)
    except TimeoutError:
        for e in episodes:
            if e.live:
                e.fail(f"episode deadline ({cfg.episode_timeout_s} s) passed")
    except (OpenEnvError, OSError) as exc:
        for e in episodes:
            if e.live:
                e.fail(f"{type(exc).__name__}: {exc}")
    finally:
        await _close(client, opened, cfg.env_timeout_s)
    return episodes


async def _play(
    client: Any,
    text: TextEnv,
    policy: Policy,
    episodes: list[Episode],
    opened: list[str],
    cfg: RolloutSettings,
    version: int,
    generator: torch.Generator,
    device: torch.device,
) -> None:
    render = policy.renderer
    opened += [e.session for e in episodes]
    t0 = time.perf_counter()
    replies = await client.reset_batch(
        {e.session: {"seed": e.seed} for e in episodes}, return_exceptions=True, timeout_s=cfg.env_timeout_s
    )
    latency = time.perf_counter() - t0
    for e, item in zip(episodes, replies, strict=True):
        e.env_latency_s.append(latency)
        try:
            obs, _, done, _ = _observation(item)
            e.append_env(render.first(text.observation_text(obs)))
            if done:
                e.fail("the episode ended at reset")
        except OpenEnvError as exc:
            e.fail(f"reset: {exc}")
    for turn in range(cfg.max_turns):
        live = [e for e in episodes if e.live]
        if not live:
            return
        outs = await asyncio.to_thread(
            sample,
            policy,
            [e.tokens for e in live],
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            generator=generator,
            device=device,
        )
        actions = {}
        for e, (ids, logps) in zip(live, outs, strict=True):
            e.append_policy(ids, logps, version)
            e.turns += 1
            actions[e.session] = text.make_action(render.decode(ids))
        t0 = time.perf_counter()
        replies = await client.step_batch(actions, return_exceptions=True, timeout_s=cfg.env_timeout_s)
        latency = time.perf_counter() - t0
        for e, item in zip(live, replies, strict=True):
            e.env_latency_s.append(latency)
            try:
                obs, reward, done, truncated = _observation(item)
            except OpenEnvError as exc:
                e.fail(f"step: {exc}")
                continue
            e.reward = (e.reward or 0.0) + reward
            if done:
                e.finished, e.truncated = True, truncated
                continue
            reply = render.next(text.observation_text(obs))
            if turn == cfg.max_turns - 1 or len(e.tokens) + len(reply) + cfg.max_new_tokens > cfg.max_tokens:
                e.finished, e.truncated = True, True
            else:
                e.append_env(reply)


async def _close(client: Any, names: list[str], timeout_s: float) -> None:
    """Close the sessions (one batch frame); a dead connection has nothing left to close."""
    if not names:
        return
    with contextlib.suppress(OpenEnvError, OSError, TimeoutError):
        await asyncio.wait_for(asyncio.shield(client.close_batch(names, return_exceptions=True)), timeout_s)
