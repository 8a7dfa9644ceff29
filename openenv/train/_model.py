"""Policies: the ``tiny`` preset (a small randomly initialised transformer, pure torch)
and local Hugging Face model folders.

A policy is ``Policy(model, tokenizer)`` where ``model(input_ids, attention_mask)``
returns logits ``[batch, time, vocab]`` and the tokenizer is a ``Renderer`` (see
``_render.py``) that turns observation text into the token ids appended to a
conversation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ._render import CharRenderer, HFRenderer, Renderer


@dataclass(frozen=True)
class TinyConfig:
    """Shape of the ``tiny`` preset."""

    vocab_size: int
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    max_len: int = 256
    never: tuple[int, ...] = ()
    """Token ids the model never emits (``<pad> <bos> <unk> <turn>``): their logits are -1e9."""


class _Block(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model)
        )

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        out: Tensor = x + self.mlp(self.ln2(x))
        return out


class _Head(nn.Module):
    """The LM head; ids in ``never`` get a logit of -1e9 (probability 0, no nan in entropies)."""

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.proj = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        never = torch.zeros(cfg.vocab_size, dtype=torch.bool)
        never[list(cfg.never)] = True
        self.never: Tensor
        self.register_buffer("never", never, persistent=False)

    def forward(self, h: Tensor) -> Tensor:
        logits: Tensor = self.proj(h)
        return logits.masked_fill(self.never, -1e9)


class TinyLM(nn.Module):
    """A pre-norm decoder-only transformer with learned positions."""

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = _Head(cfg)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
        for block in self.blocks:
            assert isinstance(block, _Block)
            nn.init.normal_(block.proj.weight, std=0.02 / math.sqrt(2 * cfg.n_layers))

    def hidden(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """Final hidden states ``[b, t, d]``; left padding is allowed."""
        t = input_ids.shape[1]
        if t > self.cfg.max_len:
            raise ValueError(f"sequence of {t} tokens is longer than the model's max_len {self.cfg.max_len}")
        keep = attention_mask.bool()
        positions = (keep.long().cumsum(1) - 1).clamp(min=0)
        x = self.tok(input_ids) + self.pos(positions)
        causal = torch.ones(t, t, dtype=torch.bool, device=input_ids.device).tril()
        mask = causal[None, None] & keep[:, None, None, :]
        mask = mask | torch.eye(t, dtype=torch.bool, device=input_ids.device)[None, None]
        for block in self.blocks:
            x = block(x, mask)
        return self.ln(x)  # type: ignore[no-any-return]

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        logits: Tensor = self.head(self.hidden(input_ids, attention_mask))
        return logits


@dataclass
class Policy:
    """A model and the renderer that goes with it."""

    model: nn.Module
    renderer: Renderer
    name: str

    def logits(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        if isinstance(self.model, TinyLM):
            return self.model(input_ids, attention_mask)  # type: ignore[no-any-return]
        out: Any = self.model(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=_positions(attention_mask)
        )
        return out.logits  # type: ignore[no-any-return]


def load_policy(name: str, *, seed: int = 0) -> Policy:
    """``"tiny"`` -> a fresh ``TinyLM`` (seeded); otherwise a local Hugging Face folder."""
    if name == "tiny":
        renderer = CharRenderer()
        gen = torch.random.fork_rng(devices=[])
        with gen:
            torch.manual_seed(seed)
            never = (renderer.pad_id, renderer.bos_id, renderer.unk_id, renderer.turn_id)
            model = TinyLM(TinyConfig(vocab_size=renderer.vocab_size, never=never))
        return Policy(model, renderer, "tiny")
    path = Path(name)
    if not path.is_dir():
        raise ValueError(f"model {name!r} is neither the preset 'tiny' nor a local model folder")
    from .._extras import require

    transformers = require("transformers", extra="train", feature="a Hugging Face model")
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path)
    return Policy(model, HFRenderer(tokenizer), str(path))


def hidden_and_head(policy: Policy, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, nn.Module]:
    """Final hidden states and the LM head, so logits can be computed in chunks."""
    model: Any = policy.model
    if isinstance(model, TinyLM):
        return model.hidden(input_ids, attention_mask), model.head
    out = model.get_decoder()(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=_positions(attention_mask)
    )
    return out.last_hidden_state, model.get_output_embeddings()


def _positions(attention_mask: Tensor) -> Tensor:
    """Position ids that skip left padding."""
    return (attention_mask.long().cumsum(1) - 1).clamp(min=0)
