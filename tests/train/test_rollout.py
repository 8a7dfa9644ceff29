"""Rollouts over a real server: token-in/token-out, masks, closing, failures."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import torch

from openenv.train import RolloutWorker, load_policy
from openenv.train._trainer import rollout_settings

from ._count_env import CountAction, CountEnv, CountEnv2, CountObservation
from ._count_fixtures import SlowCountEnv, small_config


def worker(urls: list[str], tmp_path: Any, **overrides: Any) -> RolloutWorker:
    cfg = small_config(urls, str(tmp_path), **overrides)
    policy = load_policy("tiny", seed=0)
    return RolloutWorker("tiny", urls, rollout_settings(cfg), seed=0, policy=policy)


async def test_multi_turn_token_in_token_out(serve: Callable[..., Any], tmp_path: Any) -> None:
    server = serve(CountEnv2, max_sessions=64)
    w = worker([server.url], tmp_path, max_turns=2, max_new_tokens=3)
    w.load_state(b"", version=7)
    episodes = await w.rollout(0, [(0, 11), (1, 12)])
    r = w.policy.renderer
    assert len(episodes) == 8
    assert all(e.error is None for e in episodes)
    for e in episodes:
        rng = random.Random(e.seed)
        digits = [rng.randrange(10) for _ in range(2)]
        assert e.turns == 2
        # rebuild the conversation from its parts: prompt, answer 1, env reply, answer 2
        first = r.first(str(digits[0]))
        sampled = [i for i, m in enumerate(e.mask) if m == 1]
        assert e.tokens[: len(first)] == first
        a1_end = len(first) + next(k for k, i in enumerate(sampled) if i != len(first) + k)
        a1 = e.tokens[len(first) : a1_end]
        reply = r.next(str(digits[1]))
        assert e.tokens[a1_end : a1_end + len(reply)] == reply
        a2 = e.tokens[a1_end + len(reply) :]
        assert e.mask == [0] * len(first) + [1] * len(a1) + [0] * len(reply) + [1] * len(a2)
        assert e.versions == [7 if m else -1 for m in e.mask]
        assert all(lp == 0.0 for lp, m in zip(e.logprobs, e.mask, strict=True) if not m)
        # the reward is the env's, for the text the sampler produced
        expected = 0.0
        for d, answer in zip(digits, (a1, a2), strict=True):
            head = r.decode(answer)[:1]
            expected += 1.0 if head == str((d + 1) % 10) else 0.1 if head.isdigit() else 0.0
        assert e.reward == expected
        # the trainer scores exactly these ids: the sampler's logprobs match a recompute
        ids = torch.tensor([e.tokens])
        with torch.no_grad():
            lp = torch.log_softmax(w.policy.logits(ids, torch.ones_like(ids))[0, :-1], -1)
        recomputed = lp.gather(1, ids[0, 1:, None]).squeeze(1)
        mask = torch.tensor(e.mask[1:], dtype=torch.bool)
        assert torch.allclose(recomputed[mask], torch.tensor(e.logprobs[1:])[mask], atol=1e-4)
    await w.close()
    server.wait_active(0)


async def test_a_dead_server_fails_its_episodes_only(serve: Callable[..., Any], tmp_path: Any) -> None:
    server = serve(CountEnv2, max_sessions=64)
    dead = "http://127.0.0.1:9"  # discard port: nothing listens
    w = worker([server.url, dead], tmp_path, max_turns=2)
    episodes = await w.rollout(0, [(0, 1), (1, 2), (2, 3), (3, 4)])
    ok = [e for e in episodes if e.reward is not None]
    failed = [e for e in episodes if e.reward is None]
    assert {e.group for e in ok} == {0, 2}
    assert {e.group for e in failed} == {1, 3}
    assert all("cannot reach" in (e.error or "") for e in failed)
    await w.close()
    server.wait_active(0)


async def test_a_timed_out_episode_fails_without_stalling(serve: Callable[..., Any], tmp_path: Any) -> None:
    gate, stepped = threading.Event(), threading.Event()

    class HeldCountEnv(SlowCountEnv):
        """Every step waits until the test sets ``gate`` (bounded): no rollout may wait for it."""

        def step(self, action: CountAction) -> CountObservation:
            gate.wait(30)
            stepped.set()
            return CountEnv.step(self, action)

    server = serve(HeldCountEnv, max_sessions=64)
    try:
        await _timed_out_episodes_fail(server, tmp_path)
        assert not stepped.is_set()  # both rollouts ended while every step was still held
    finally:
        gate.set()
    server.wait_active(0, timeout_s=30)  # the held steps finish, then the sessions close


async def _timed_out_episodes_fail(server: Any, tmp_path: Any) -> None:
    w = worker([server.url], tmp_path, env_timeout_s=0.3, episode_timeout_s=5.0)
    episodes = await w.rollout(0, [(0, 1)])
    # the server's deadline (DEADLINE_EXCEEDED per item) or the client's (RequestTimeout)
    for e in episodes:
        assert e.reward is None
        assert "deadline" in (e.error or "").lower() or "RequestTimeout" in (e.error or "")
    w2 = worker([server.url], tmp_path, env_timeout_s=10.0, episode_timeout_s=0.5)
    episodes = await w2.rollout(0, [(0, 1)])
    assert all(e.reward is None and "episode deadline" in (e.error or "") for e in episodes)
    await w.close()
    await w2.close()


async def test_sessions_in_flight_are_bounded(serve: Callable[..., Any], tmp_path: Any) -> None:
    # the server takes 8 sessions; 4 groups of 4 need 16: two waves of 8, none refused
    server = serve(CountEnv2, max_sessions=8)
    w = worker([server.url], tmp_path, max_turns=2, max_sessions=8)
    episodes = await w.rollout(0, [(0, 1), (1, 2), (2, 3), (3, 4)])
    assert [e.error for e in episodes] == [None] * 16
    await w.close()
    server.wait_active(0)
    # without the bound the same rollout overruns the server's limit
    w = worker([server.url], tmp_path, max_turns=2, max_sessions=16)
    episodes = await w.rollout(0, [(0, 1), (1, 2), (2, 3), (3, 4)])
    errors = {e.error for e in episodes}
    assert None in errors  # the first 8 sessions played
    assert any("at capacity" in (err or "") for err in errors)  # the rest were refused at reset
    await w.close()
    server.wait_active(0)
