"""The learner: policy, optimizer, reference model, one update per step, checkpoints.

``Learner`` is what the ``TrainerActor`` holds in its own Monarch process (``workers >
0``) and what the in-process path holds directly (``workers == 0``); the ``train()`` loop
only orchestrates it.
"""

from __future__ import annotations

import copy
import io
import os
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ._algos import k3_kl, token_logprobs
from ._config import TrainConfig
from ._model import Policy, hidden_and_head, load_policy
from ._rollout import Episode


def pick_device(name: str) -> torch.device:
    """``cpu`` or ``cuda``; ``cuda`` without a visible GPU is a clear error."""
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(
            "--device cuda: no CUDA GPU is visible to torch (torch.cuda.is_available() is False)"
        )
    return torch.device(name)


def state_blob(policy: Policy) -> bytes:
    """The policy's weights as one bytes object (CPU tensors, ``torch.save`` format)."""
    buf = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in policy.model.state_dict().items()}, buf)
    return buf.getvalue()


def _pad(rows: list[list[Any]], value: Any, dtype: torch.dtype) -> Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows], dtype=dtype)


_NAMES = ("loss", "entropy", "clip_low", "clip_high", "kl", "logprob_gap")


def update(
    cfg: TrainConfig,
    policy: Policy,
    ref: torch.nn.Module | None,
    opt: torch.optim.Optimizer,
    episodes: list[Episode],
    adv: list[float],
    device: torch.device,
    micro_batch: int | None = None,
) -> dict[str, float]:
    """One optimizer step on ``episodes`` (``adv[i]`` is episode ``i``'s advantage).

    With ``cfg.micro_batch_mode == "auto"`` the passes take ``micro_batch`` episodes each (a
    size an earlier step was forced down to; ``None``: the whole step), halved after each
    out-of-memory error until the step fits; the size used is returned as the
    ``micro_batch`` metric. The loss is normalised over the whole step (``n_tokens``,
    ``n_sequences``), so the step does not depend on the size.
    """
    mode = cfg.micro_batch_mode
    if mode != "auto":
        acc = _passes(cfg, policy, ref, opt, episodes, adv, device, mode)
        return _apply(cfg, policy, ref, opt, acc)
    size = min(micro_batch or len(episodes), len(episodes))
    while True:
        try:
            acc = _passes(cfg, policy, ref, opt, episodes, adv, device, size)
            break
        except torch.OutOfMemoryError as exc:
            if size <= 1:
                raise torch.OutOfMemoryError(
                    "micro_batch='auto': one episode per forward/backward pass still runs out "
                    f"of memory ({exc}); lower max_tokens or use a smaller model"
                ) from exc
        # Outside the except block: the error's traceback (and the tensors its frames
        # hold) is gone, so the cache can give their memory back before the retry.
        opt.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        size //= 2
    sums = _apply(cfg, policy, ref, opt, acc)
    sums["micro_batch"] = float(size)
    return sums


def _passes(
    cfg: TrainConfig,
    policy: Policy,
    ref: torch.nn.Module | None,
    opt: torch.optim.Optimizer,
    episodes: list[Episode],
    adv: list[float],
    device: torch.device,
    micro: int,
) -> Tensor:
    """The step's gradients, ``micro`` episodes per forward/backward; the summed metrics."""
    pad = policy.renderer.pad_id
    ids = _pad([e.tokens for e in episodes], pad, torch.long)
    attn = _pad([[1] * len(e.tokens) for e in episodes], 0, torch.long)
    mask = _pad([e.mask for e in episodes], 0, torch.float)[:, 1:]
    old = _pad([e.logprobs for e in episodes], 0.0, torch.float)[:, 1:]
    a = torch.tensor(adv, dtype=torch.float)
    n_tokens = float(mask.sum())
    n_seqs = float((mask.sum(1) > 0).sum())
    # The metrics are summed on the device and read back once, after the step: a read per
    # micro-batch would make the host wait for the GPU each time instead of queueing ahead.
    acc = torch.zeros(len(_NAMES), device=device)
    policy.model.train()
    opt.zero_grad(set_to_none=True)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    for s in range(0, len(episodes), micro):
        sl = slice(s, s + micro)
        inp, am = ids[sl].to(device), attn[sl].to(device)
        m, o, av = mask[sl].to(device), old[sl].to(device), a[sl].to(device)
        with autocast:
            hidden, head = hidden_and_head(policy, inp[:, :-1], am[:, :-1])
            logp, ent = token_logprobs(hidden, head, inp[:, 1:], cfg.logprob_chunk, cfg.temperature)
        out = cfg.loss(
            logp, o, av, m, n_tokens=n_tokens, n_sequences=n_seqs, eps_low=cfg.eps_low, eps_high=cfg.eps_high
        )
        loss = out.loss
        kl = torch.zeros((), device=device)
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
        loss.backward()  # type: ignore[no-untyped-call]
        with torch.no_grad():
            acc += torch.stack(
                [
                    loss.detach().float(),
                    (ent.detach() * m).sum() / n_tokens,
                    torch.as_tensor(out.clip_low, device=device, dtype=torch.float),
                    torch.as_tensor(out.clip_high, device=device, dtype=torch.float),
                    kl.detach().float(),
                    ((logp.detach() - o).abs() * m).sum() / n_tokens,
                ]
            )
    return acc


def _apply(
    cfg: TrainConfig, policy: Policy, ref: torch.nn.Module | None, opt: torch.optim.Optimizer, acc: Tensor
) -> dict[str, float]:
    """Clip the gradients, step the optimizer; the step's metrics."""
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), cfg.grad_clip)
    opt.step()
    sums = dict(zip(_NAMES, acc.tolist(), strict=True))
    sums["grad_norm"] = float(grad_norm)
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


class Learner:
    """The trained policy with its optimizer and (``kl_beta > 0``) frozen reference."""

    def __init__(self, cfg: TrainConfig, device: str | None = None) -> None:
        self.cfg = cfg
        self.out = Path(cfg.out)
        self.device = pick_device(device or cfg.device)
        torch.manual_seed(cfg.seed)
        self.policy = load_policy(cfg.model, seed=cfg.seed)
        self.policy.model.to(self.device)
        self.opt = torch.optim.AdamW(self.policy.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.ref = copy.deepcopy(self.policy.model).eval().requires_grad_(False) if cfg.kl_beta > 0 else None
        self.micro_batch: int | None = None
        """With ``micro_batch="auto"``: the size an out-of-memory error forced (``None``:
        none yet, each step tries all its episodes in one pass)."""
        self.logged_micro_batch = False

    def restore(self) -> int:
        """With ``resume``, load ``DIR/checkpoint.pt``; the first step to run."""
        return load_checkpoint(self.out, self.policy, self.opt) if self.cfg.resume else 0

    def update(self, episodes: list[Episode], adv: list[float]) -> dict[str, float]:
        sums = update(self.cfg, self.policy, self.ref, self.opt, episodes, adv, self.device, self.micro_batch)
        if "micro_batch" in sums:
            # ``micro_batch="auto"``: a size an out-of-memory error forced is kept for the
            # later steps (until one needs less), and logged once: in the first step's row
            # and in the row of a step that had to lower it.
            size = int(sums["micro_batch"])
            shrunk = size < len(episodes) and size != self.micro_batch
            if self.logged_micro_batch and not shrunk:
                del sums["micro_batch"]
            if shrunk:
                self.micro_batch = size
            self.logged_micro_batch = True
        return sums

    def save(self, step: int) -> None:
        save_checkpoint(self.out, self.policy, self.opt, step, self.cfg)

    def blob(self) -> bytes:
        return state_blob(self.policy)
