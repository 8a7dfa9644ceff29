"""Group advantages and policy losses as pure functions on tensors.

Rewards of failed episodes are ``nan``: they are left out of their group's statistics
and get advantage 0. Losses take per-token tensors ``[rows, time]`` with a loss mask
(1 on tokens the policy sampled, 0 on prompt, env replies and padding) and a global
token count, so the result does not depend on how the batch is cut into micro-batches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor
from torch.nn import functional as F

AdvantageFn = Callable[[Tensor], Tensor]


def _valid(rewards: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    ok = ~torch.isnan(rewards)
    n = ok.sum()
    mean = torch.where(ok, rewards, 0.0).sum() / n.clamp(min=1)
    return ok, n, mean


def grpo_advantages(rewards: Tensor, eps: float = 1e-4) -> Tensor:
    """GRPO: ``(r - mean) / (std + eps)`` over the group's valid episodes (unbiased std)."""
    ok, n, mean = _valid(rewards)
    var = torch.where(ok, (rewards - mean) ** 2, 0.0).sum() / (n - 1).clamp(min=1)
    return torch.where(ok, (rewards - mean) / (var.sqrt() + eps), 0.0)


def dr_grpo_advantages(rewards: Tensor) -> Tensor:
    """Dr.GRPO: ``r - mean`` (no std, so no question-difficulty bias)."""
    ok, _, mean = _valid(rewards)
    return torch.where(ok, rewards - mean, 0.0)


def rloo_advantages(rewards: Tensor) -> Tensor:
    """RLOO: ``r_i`` minus the mean of the other valid episodes of the group."""
    ok, n, _ = _valid(rewards)
    total = torch.where(ok, rewards, 0.0).sum()
    others = (total - rewards) / (n - 1).clamp(min=1)
    return torch.where(ok & (n > 1), rewards - others, 0.0)


ADVANTAGES: dict[str, AdvantageFn] = {
    "grpo": grpo_advantages,
    "dr_grpo": dr_grpo_advantages,
    "rloo": rloo_advantages,
}


def token_logprobs(
    hidden: Tensor,
    head: Callable[[Tensor], Tensor],
    targets: Tensor,
    chunk: int = 1024,
    temperature: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """Log-probabilities of ``targets`` and the entropy at ``temperature``, ``[rows, time]`` each.

    ``hidden`` is ``[rows, time, d]``; ``head`` maps hidden states to logits. Positions
    are processed ``chunk`` at a time, so full-vocabulary fp32 logits exist for at most
    ``chunk`` positions at once.
    """
    rows, time = targets.shape
    flat_h = hidden.reshape(rows * time, -1)
    flat_t = targets.reshape(-1)
    logps, ents = [], []
    for start in range(0, rows * time, chunk):
        logits = head(flat_h[start : start + chunk]).float() / temperature
        logp_all = F.log_softmax(logits, dim=-1)
        logps.append(logp_all.gather(1, flat_t[start : start + chunk, None]).squeeze(1))
        ents.append(-(logp_all.exp() * logp_all).sum(-1))
    return torch.cat(logps).view(rows, time), torch.cat(ents).view(rows, time)


def k3_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Per-token k3 estimate of KL(pi || ref): ``exp(ref - logp) - (ref - logp) - 1``."""
    d = (ref_logp - logp).clamp(-20.0, 20.0)
    return d.exp() - d - 1.0


@dataclass
class LossOut:
    """A loss and its statistics (``clip_low``/``clip_high``: fraction of tokens clipped)."""

    loss: Tensor
    clip_low: Tensor
    clip_high: Tensor


def clipped_token_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    n_tokens: float,
    n_sequences: float,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
) -> LossOut:
    """PPO clipped surrogate with clip-higher, summed over tokens / ``n_tokens`` (DAPO).

    ``logp``, ``old_logp`` and ``mask`` are ``[rows, time]``; ``advantages`` is one per
    row, broadcast to the row's tokens; ``n_tokens`` counts the mask-1 tokens of the
    whole batch (all micro-batches), so the sum over micro-batches is the batch loss.
    """
    adv = advantages[:, None]
    ratio = (logp - old_logp).exp()
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    per_token = -torch.minimum(ratio * adv, clipped * adv)
    loss = (per_token * mask).sum() / n_tokens
    low = ((ratio < 1.0 - eps_low) & (adv < 0)).float()
    high = ((ratio > 1.0 + eps_high) & (adv > 0)).float()
    return LossOut(loss, (low * mask).sum() / n_tokens, (high * mask).sum() / n_tokens)


def gspo_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    n_tokens: float,
    n_sequences: float,
    eps_low: float = 3e-4,
    eps_high: float = 4e-4,
) -> LossOut:
    """GSPO: one ratio per sequence, ``exp(mean of its token log-ratios)``, clipped.

    Same arguments as ``clipped_token_loss``; the loss is averaged over ``n_sequences``
    (the rows of the whole batch that have at least one mask-1 token).
    """
    lengths = mask.sum(1)
    real = (lengths > 0).float()
    log_s = ((logp - old_logp) * mask).sum(1) / lengths.clamp(min=1)
    s = log_s.exp()
    clipped = s.clamp(1.0 - eps_low, 1.0 + eps_high)
    per_seq = -torch.minimum(s * advantages, clipped * advantages)
    low = ((s < 1.0 - eps_low) & (advantages < 0)).float() * real
    high = ((s > 1.0 + eps_high) & (advantages > 0)).float() * real
    return LossOut((per_seq * real).sum() / n_sequences, low.sum() / n_sequences, high.sum() / n_sequences)


class PolicyLoss(Protocol):
    """The signature ``clipped_token_loss`` and ``gspo_loss`` share."""

    def __call__(
        self,
        logp: Tensor,
        old_logp: Tensor,
        advantages: Tensor,
        mask: Tensor,
        *,
        n_tokens: float,
        n_sequences: float,
        eps_low: float = ...,
        eps_high: float = ...,
    ) -> LossOut: ...


LOSSES: dict[str, PolicyLoss] = {"token": clipped_token_loss, "gspo": gspo_loss}
