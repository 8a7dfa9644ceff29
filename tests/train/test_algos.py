"""Advantages, losses and chunked logprobs against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from openenv.train import (
    clipped_token_loss,
    dr_grpo_advantages,
    grpo_advantages,
    gspo_loss,
    k3_kl,
    rloo_advantages,
    token_logprobs,
)

NAN = float("nan")


def test_grpo_advantages_by_hand() -> None:
    # rewards 1, 0, 0, 1: mean 0.5, unbiased std sqrt(1/3)
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), eps=0.0)
    s = math.sqrt(1 / 3)
    assert adv.tolist() == pytest.approx([0.5 / s, -0.5 / s, -0.5 / s, 0.5 / s])


def test_failed_episodes_are_left_out_of_the_group() -> None:
    # the nan (failed) episode neither moves the mean nor gets an advantage
    adv = grpo_advantages(torch.tensor([1.0, NAN, 0.0]), eps=0.0)
    s = math.sqrt(0.5)  # std of {1, 0}, unbiased
    assert adv.tolist() == pytest.approx([0.5 / s, 0.0, -0.5 / s])
    assert dr_grpo_advantages(torch.tensor([1.0, NAN, 0.0])).tolist() == pytest.approx([0.5, 0.0, -0.5])


def test_equal_rewards_give_zero_advantage() -> None:
    assert grpo_advantages(torch.tensor([0.3, 0.3, 0.3])).tolist() == [0.0, 0.0, 0.0]
    assert rloo_advantages(torch.tensor([0.3, 0.3])).tolist() == pytest.approx([0.0, 0.0])


def test_dr_grpo_and_rloo_by_hand() -> None:
    r = torch.tensor([3.0, 1.0, 2.0])
    assert dr_grpo_advantages(r).tolist() == pytest.approx([1.0, -1.0, 0.0])
    # RLOO: r_i - mean of the others
    assert rloo_advantages(r).tolist() == pytest.approx([3 - 1.5, 1 - 2.5, 2 - 2.0])
    # a lone valid episode has no baseline: advantage 0
    assert rloo_advantages(torch.tensor([1.0, NAN])).tolist() == [0.0, 0.0]


def test_clipped_token_loss_by_hand() -> None:
    # one row, three tokens; the last is an env token (mask 0)
    logp = torch.log(torch.tensor([[0.5, 0.9, 0.1]]))
    old = torch.log(torch.tensor([[0.25, 0.9, 0.9]]))
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = clipped_token_loss(
        logp, old, torch.tensor([2.0]), mask, n_tokens=4, n_sequences=1, eps_low=0.2, eps_high=0.28
    )
    # token 1: ratio 2 -> clipped to 1.28, min(2*2, 1.28*2) = 2.56; token 2: ratio 1 -> 2
    assert float(out.loss) == pytest.approx(-(2.56 + 2.0) / 4)
    assert float(out.clip_high) == pytest.approx(1 / 4)
    assert float(out.clip_low) == 0.0
    # negative advantage: ratio 0.5 < 0.8 -> the clipped term -0.8*A is the min
    out = clipped_token_loss(
        torch.log(torch.tensor([[0.5]])),
        torch.tensor([[0.0]]),
        torch.tensor([-1.0]),
        torch.tensor([[1.0]]),
        n_tokens=1,
        n_sequences=1,
    )
    assert float(out.loss) == pytest.approx(0.8)
    assert float(out.clip_low) == 1.0


def test_env_tokens_get_no_gradient() -> None:
    logp = torch.zeros(1, 3, requires_grad=True)
    mask = torch.tensor([[1.0, 0.0, 1.0]])
    out = clipped_token_loss(logp, torch.zeros(1, 3), torch.tensor([1.0]), mask, n_tokens=2, n_sequences=1)
    out.loss.backward()
    assert logp.grad is not None
    assert logp.grad.tolist() == [[-0.5, 0.0, -0.5]]


def test_gspo_by_hand() -> None:
    # token log-ratios 0.2 and 0.0 (third masked): s = exp(0.1)
    logp = torch.tensor([[0.2, 0.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])

    def gspo(eps_low: float, eps_high: float):  # one sequence, advantage 1, old log-probs 0
        return gspo_loss(
            logp, torch.zeros(1, 3), torch.tensor([1.0]), mask, n_tokens=2, n_sequences=1,
            eps_low=eps_low, eps_high=eps_high,
        )  # fmt: skip

    out = gspo(0.5, 0.5)
    assert float(out.loss) == pytest.approx(-math.exp(0.1))
    out = gspo(3e-4, 4e-4)
    assert float(out.loss) == pytest.approx(-(1 + 4e-4))
    assert float(out.clip_high) == 1.0


def test_k3_by_hand() -> None:
    logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    # r = ref/pi = 0.5: r - log r - 1
    assert float(k3_kl(logp, ref)) == pytest.approx(0.5 - math.log(0.5) - 1)
    assert float(k3_kl(ref, ref)) == 0.0


def test_chunked_logprobs_match_full_softmax() -> None:
    torch.manual_seed(0)
    head = torch.nn.Linear(8, 11, bias=False)
    hidden = torch.randn(3, 5, 8)
    targets = torch.randint(0, 11, (3, 5))
    full = torch.log_softmax(head(hidden) / 0.7, -1)
    for chunk in (1, 4, 1024):
        logp, ent = token_logprobs(hidden, head, targets, chunk, temperature=0.7)
        assert torch.allclose(logp, full.gather(2, targets[..., None]).squeeze(2), atol=1e-6)
        assert torch.allclose(ent, -(full.exp() * full).sum(-1), atol=1e-5)
