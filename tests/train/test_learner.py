"""``update``: one optimizer step, the same whatever the micro-batch."""

from __future__ import annotations

import copy
import math
import random

import pytest
import torch

from openenv.train import TrainConfig, load_policy
from openenv.train._learner import update
from openenv.train._rollout import Episode


def _episodes(n: int, vocab: int) -> list[Episode]:
    rng = random.Random(0)
    out = []
    for i in range(n):
        prompt = [rng.randrange(4, vocab) for _ in range(rng.randint(2, 5))]
        sampled = [rng.randrange(4, vocab) for _ in range(rng.randint(1, 4))]
        out.append(
            Episode(
                group=i // 4,
                seed=i,
                session=f"s{i}",
                tokens=prompt + sampled,
                mask=[0] * len(prompt) + [1] * len(sampled),
                logprobs=[0.0] * len(prompt) + [rng.uniform(-4.0, -0.5) for _ in sampled],
                versions=[-1] * len(prompt) + [0] * len(sampled),
            )
        )
    return out


@pytest.mark.parametrize("kl_beta", [0.0, 0.1])
def test_the_step_and_its_metrics_do_not_depend_on_the_micro_batch(kl_beta: float) -> None:
    policy = load_policy("tiny", seed=0)
    episodes = _episodes(10, policy.renderer.vocab_size)
    adv = [random.Random(i).uniform(-1, 1) for i in range(len(episodes))]
    results = {}
    for micro in (3, 64):  # 4 passes (3+3+3+1), then one
        cfg = TrainConfig(env=["http://127.0.0.1:9"], micro_batch=micro, kl_beta=kl_beta)
        p = copy.deepcopy(policy)
        ref = copy.deepcopy(policy.model).eval() if kl_beta else None
        opt = torch.optim.SGD(p.model.parameters(), lr=0.1)
        metrics = update(cfg, p, ref, opt, episodes, adv, torch.device("cpu"))
        results[micro] = (metrics, [t.detach().clone() for t in p.model.parameters()])
    (small, w_small), (whole, w_whole) = results[3], results[64]
    assert small.keys() == whole.keys()
    for key in small:
        if key == "kl" and not kl_beta:
            assert math.isnan(small[key])
            assert math.isnan(whole[key])
            continue
        assert small[key] == pytest.approx(whole[key], rel=1e-4, abs=1e-6), key
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(w_small, w_whole, strict=True))
    assert any(not torch.equal(a, b) for a, b in zip(w_whole, policy.model.parameters(), strict=True))
