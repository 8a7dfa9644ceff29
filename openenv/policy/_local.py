"""A local checkpoint: load it, render chats, sample in batches (token ids and logprobs).

A checkpoint is the ``tiny`` preset (randomly initialised), a Hugging Face model folder
(``config.json``; ``openenv.train.random_hf_model`` writes one), or what ``openenv
train --out DIR`` writes (``DIR/checkpoint.pt``: its model, with the trained weights).
Nothing is downloaded. Needs the ``train`` extra (torch, transformers).

Concurrent requests are batched: whatever arrives while a batch samples goes into the
next one (``LocalModel.generate`` from many tasks, one ``sample`` call per batch).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._exceptions import PolicyError
from .._extras import require
from ._turns import SampledTurns, render_turns


@dataclass
class _Request:
    context: list[int]
    max_new_tokens: int
    temperature: float
    future: asyncio.Future[tuple[list[int], list[float]]] = field(repr=False)
    on_token: Callable[[int, float], None] | None = None  # called on the sampler's thread


class LocalModel:
    """One loaded checkpoint and its renderer; ``generate`` batches concurrent calls."""

    def __init__(self, checkpoint: str, *, seed: int = 0, device: str = "cpu", max_batch: int = 64) -> None:
        require("torch", extra="train", feature="a local checkpoint")
        import torch

        from ..train._model import load_policy

        self.checkpoint = checkpoint
        self.device = torch.device(device)
        self.policy = _load(checkpoint, seed)
        self.policy.model.to(self.device).eval()
        self.renderer = self.policy.renderer
        self.generator = torch.Generator().manual_seed(seed)
        self.max_batch = max_batch
        self._queue: list[_Request] = []
        self._lock = threading.Lock()  # one sample() at a time (torch modules are not re-entrant)
        self._worker: asyncio.Task[None] | None = None
        self.batch_sizes: list[int] = []  # the size of each sample() call, in order
        self.turns = SampledTurns()
        _ = load_policy  # imported above so a missing train extra fails at construction

    @property
    def name(self) -> str:
        return str(self.policy.name)

    @property
    def context_len(self) -> int | None:
        """The most tokens the model takes (prompt and completion), where it says."""
        model = self.policy.model
        found = getattr(getattr(model, "cfg", None), "max_len", None) or getattr(
            getattr(model, "config", None), "max_position_embeddings", None
        )
        return int(found) if isinstance(found, int) else None

    def fit(self, context: Sequence[int], max_new_tokens: int) -> tuple[list[int], int, str | None]:
        """What of ``context`` the model can take with room for ``max_new_tokens``: the
        context itself when it fits, else its last tokens (cut from the left, as a
        sliding window), ``max_new_tokens`` lowered only where it alone fills the
        context; and the warning to record when anything was cut (None otherwise)."""
        limit = self.context_len
        if limit is None or len(context) + max_new_tokens <= limit:
            return list(context), max_new_tokens, None
        keep = min(len(context), max(1, limit - max_new_tokens))
        new = min(max_new_tokens, limit - keep)
        warning = (
            f"the prompt ({len(context)} tokens) and max_tokens ({max_new_tokens}) exceed the model's "
            f"context of {limit} tokens: the model saw the prompt's last {keep} tokens "
            f"({len(context) - keep} cut from the left)"
        )
        if new < max_new_tokens:
            warning += f" and sampled at most {new} tokens"
        return list(context[len(context) - keep :]), new, warning

    def render(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> list[int]:
        """The prompt ids of a chat, ready for the assistant's turn: by the tokenizer's chat
        template when it has one, else by extension only (``_turns``: prefix-stable)."""
        tok = getattr(self.renderer, "tok", None)
        if tok is not None and getattr(tok, "chat_template", None):
            plain = [{"role": str(m.get("role", "user")), "content": _content(m)} for m in messages]
            kwargs: dict[str, Any] = {"tools": list(tools)} if tools else {}
            ids = tok.apply_chat_template(plain, add_generation_prompt=True, tokenize=True, **kwargs)
            if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
            return [int(i) for i in ids]
        return render_turns(self.renderer, messages, self.turns)

    def shows_tools(self, tools: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the tokenizer's chat template puts ``tools`` into the prompt (a
        template that never reads ``tools`` renders the same ids without them)."""
        tok = getattr(self.renderer, "tok", None)
        if tok is None or not getattr(tok, "chat_template", None) or not tools:
            return False
        probe = [{"role": "user", "content": "x"}]
        try:
            return self.render(probe, tools) != self.render(probe)
        except Exception:  # a template that fails on tools does not show them
            return False

    def remember(self, prompt: Sequence[int], message: Mapping[str, Any], sampled: Sequence[int]) -> None:
        """Keep the ids sampled for the reply ``message`` to ``prompt``, so a later chat that
        carries that message renders it as those ids (prefix-stable, see ``_turns``)."""
        self.turns.remember(prompt, message, sampled)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.renderer.decode(list(ids)))

    def token_text(self, token_id: int) -> str:
        tok = getattr(self.renderer, "tok", None)
        if tok is not None:
            return str(tok.convert_ids_to_tokens(int(token_id)))
        return self.decode([token_id])

    async def generate(
        self,
        context: list[int],
        *,
        max_new_tokens: int,
        temperature: float,
        on_token: Callable[[int, float], None] | None = None,
    ) -> tuple[list[int], list[float]]:
        """Sampled ids (the stop token included, if reached) and their logprobs;
        ``on_token(token_id, logprob)`` is called as each is sampled, on the sampler's
        thread (``openenv policy serve`` streams from it)."""
        loop = asyncio.get_running_loop()
        request = _Request(
            list(context), max_new_tokens, max(temperature, 1e-5), loop.create_future(), on_token
        )
        self._queue.append(request)
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await request.future

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            groups: dict[tuple[int, float], list[_Request]] = {}
            for r in batch:
                groups.setdefault((r.max_new_tokens, r.temperature), []).append(r)
            for (n, temp), reqs in groups.items():
                self.batch_sizes.append(len(reqs))
                try:
                    outs = await asyncio.to_thread(self._sample, reqs, n, temp)
                except Exception as exc:
                    for r in reqs:
                        if not r.future.done():
                            r.future.set_exception(exc)
                    continue
                for r, out in zip(reqs, outs, strict=True):
                    if not r.future.done():
                        r.future.set_result(out)

    def _sample(self, reqs: list[_Request], max_new_tokens: int, temperature: float) -> list[Any]:
        from ..train._sampler import sample

        def tell(row: int, token_id: int, logprob: float) -> None:
            callback = reqs[row].on_token
            if callback is not None:
                callback(token_id, logprob)

        with self._lock:
            return sample(
                self.policy,
                [r.context for r in reqs],
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                generator=self.generator,
                device=self.device,
                on_token=tell if any(r.on_token for r in reqs) else None,
            )


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def missing_checkpoint(checkpoint: str) -> str:
    """The one line for a checkpoint path that does not exist."""
    return f"no checkpoint at {checkpoint!r} (a model folder, an `openenv train` --out folder, or 'tiny')"


def _load(checkpoint: str, seed: int) -> Any:
    from ..train._model import load_policy

    path = Path(checkpoint)
    if checkpoint != "tiny" and not path.exists():
        raise PolicyError(missing_checkpoint(checkpoint))
    saved = path / "checkpoint.pt"
    if path.is_dir() and saved.is_file():
        import torch

        state = torch.load(saved, map_location="cpu", weights_only=False)
        model = str(state.get("config", {}).get("model", "tiny"))
        policy = load_policy(model, seed=seed)
        policy.model.load_state_dict(state["model"])
        policy.name = str(path)
        return policy
    if path.is_dir() and not (path / "config.json").is_file():
        raise PolicyError(
            f"{checkpoint} holds neither checkpoint.pt (openenv train) nor config.json (a model folder)"
        )
    try:
        return load_policy(checkpoint, seed=seed)
    except (OSError, ValueError) as exc:
        raise PolicyError(f"cannot load the checkpoint {checkpoint!r}: {exc}") from None
