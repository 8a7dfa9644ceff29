"""Sampling from a policy: token ids in, token ids and their logprobs out.

The tiny preset samples with its own loop, Hugging Face models with ``generate``; an
``EnginePolicy`` hands sampling to an inference engine (vLLM, ``_vllm.py``).
``choose_sampler`` decides which, from ``TrainConfig.sampler``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor

from ._model import Policy, TinyLM

SAMPLERS = ("auto", "hf", "vllm")


class Engine(Protocol):
    """An inference engine that samples for a rollout worker and takes weight blobs."""

    def sample(
        self,
        contexts: list[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        generator: torch.Generator,
    ) -> list[tuple[list[int], list[float]]]: ...

    def load_state(self, blob: bytes) -> None: ...


@dataclass
class EnginePolicy(Policy):
    """A policy whose sampling is done by ``engine``; ``model`` stays for its renderer."""

    engine: Engine | None = None


NO_VLLM = "sampler 'vllm' needs vLLM, which is not installed: pip install vllm"


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def choose_sampler(name: str, model: str, device: str, *, vllm: bool | None = None) -> str:
    """``"hf"`` or ``"vllm"`` for ``TrainConfig.sampler`` ``name``.

    ``"auto"`` picks vLLM when it is installed (``vllm``: whether it is; probed when
    ``None``), the model is a Hugging Face folder and the device is CUDA; ``"hf"`` forces
    the in-process sampler; ``"vllm"`` without vLLM or with the ``tiny`` preset is an error.
    """
    if name not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, not {name!r}")
    if name == "hf":
        return "hf"
    has_vllm = vllm_installed() if vllm is None else vllm
    hf_folder = model != "tiny" and Path(model).is_dir()
    if name == "vllm":
        if not has_vllm:
            raise ValueError(NO_VLLM)
        if not hf_folder:
            raise ValueError(f"sampler 'vllm' needs a Hugging Face model folder, not {model!r}")
        return "vllm"
    return "vllm" if has_vllm and hf_folder and device.startswith("cuda") else "hf"


def _left_pad(contexts: list[list[int]], pad_id: int, device: torch.device) -> tuple[Tensor, Tensor]:
    width = max(len(c) for c in contexts)
    ids = torch.full((len(contexts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(contexts), width), dtype=torch.long)
    for i, c in enumerate(contexts):
        ids[i, width - len(c) :] = torch.tensor(c, dtype=torch.long)
        mask[i, width - len(c) :] = 1
    return ids.to(device), mask.to(device)


@torch.no_grad()
def sample(
    policy: Policy,
    contexts: list[list[int]],
    *,
    max_new_tokens: int,
    temperature: float,
    generator: torch.Generator,
    device: torch.device,
    on_token: Any = None,
) -> list[tuple[list[int], list[float]]]:
    """Continue each context until a stop token or ``max_new_tokens``.

    ``on_token(row, token_id, logprob)``, when given, is called (on this thread) as each
    token is sampled, before the next step: ``openenv policy serve`` streams from it.

    Returns, per context, the sampled ids (the stop token included) and the sampler's
    log-probability of each at ``temperature``. Sequences are left-padded together; a
    finished one is padded on the right and its extra tokens are dropped.
    """
    if not contexts:
        return []
    if isinstance(policy, EnginePolicy) and policy.engine is not None:
        return policy.engine.sample(
            contexts, max_new_tokens=max_new_tokens, temperature=temperature, generator=generator
        )
    policy.model.eval()
    ids, mask = _left_pad(contexts, policy.renderer.pad_id, device)
    stops = torch.tensor(policy.renderer.stop_ids, device=device)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    if not isinstance(policy.model, TinyLM):
        from ._hf import hf_generate

        with autocast:
            new, logps = hf_generate(
                policy.model,
                ids,
                mask,
                pad_id=policy.renderer.pad_id,
                stop_ids=policy.renderer.stop_ids,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                generator=generator,
                on_token=on_token,
            )
        return trim(new.tolist(), logps.tolist(), policy.renderer.stop_ids)
    n = len(contexts)
    done = torch.zeros(n, dtype=torch.bool, device=device)
    out_ids: list[Tensor] = []
    out_logps: list[Tensor] = []
    for _ in range(max_new_tokens):
        with autocast:
            logits = policy.logits(ids, mask)[:, -1, :].float()
        logp = torch.log_softmax(logits / temperature, dim=-1)
        nxt = torch.multinomial(logp.exp().cpu(), 1, generator=generator).squeeze(1).to(device)
        out_ids.append(torch.where(done, policy.renderer.pad_id, nxt))
        out_logps.append(logp.gather(1, nxt[:, None]).squeeze(1))
        if on_token is not None:
            for row in (~done).nonzero().flatten().tolist():
                on_token(row, int(nxt[row]), float(out_logps[-1][row]))
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        mask = torch.cat([mask, (~done).long()[:, None]], dim=1)
        done = done | torch.isin(nxt, stops)
        if bool(done.all()):
            break
    return trim(
        torch.stack(out_ids, 1).tolist(), torch.stack(out_logps, 1).tolist(), policy.renderer.stop_ids
    )


def trim(
    all_ids: list[list[int]], all_logps: list[list[float]], stop_ids: tuple[int, ...]
) -> list[tuple[list[int], list[float]]]:
    """Cut each row after its first stop token (kept); padding after it goes."""
    results = []
    for row_ids, row_logps in zip(all_ids, all_logps, strict=True):
        end = next((j + 1 for j, t in enumerate(row_ids) if t in stop_ids), len(row_ids))
        results.append((row_ids[:end], row_logps[:end]))
    return results
