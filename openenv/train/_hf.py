"""Hugging Face models: sampling with ``generate`` and a randomly initialised local model.

``random_hf_model(path)`` writes a Llama-architecture model with random weights and a
character-level tokenizer (the ``tiny`` alphabet, with a chat template) to ``path``, all
built locally: tests and benchmarks get a real ``transformers`` model of a chosen shape
where no pretrained weights can be downloaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .._extras import require
from ._render import tiny_alphabet

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] }}"
    "{% if m['role'] == 'assistant' %}{{ eos_token + '\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def random_hf_model(
    path: str | Path,
    *,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    intermediate_size: int = 256,
    max_positions: int = 2048,
    seed: int = 0,
    alphabet: str | None = None,
    roles: tuple[str, ...] = ("user", "assistant", "system"),
) -> Path:
    """Save a random ``LlamaForCausalLM`` and its tokenizer to ``path``; returns ``path``.

    ``alphabet``: the characters of the vocabulary (default: the ``tiny`` alphabet and a
    newline); ``roles``: the chat roles, each a special token ``<|role|>``."""
    transformers = require("transformers", extra="train", feature="random_hf_model")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    specials = ["<pad>", "<s>", "</s>", "<unk>", *(f"<|{role}|>" for role in roles)]
    chars = tiny_alphabet() + "\n" if alphabet is None else alphabet
    vocab = {tok: i for i, tok in enumerate([*specials, *dict.fromkeys(chars)])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=specials[4:],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = transformers.LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config)
    out = Path(path)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@torch.no_grad()
def hf_generate(
    model: Any,
    ids: torch.Tensor,
    mask: torch.Tensor,
    *,
    pad_id: int,
    stop_ids: tuple[int, ...],
    max_new_tokens: int,
    temperature: float,
    generator: torch.Generator,
    on_token: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``model.generate`` on left-padded ``ids``: new ids ``[n, k]`` and their logprobs;
    ``on_token(row, token_id, logprob)`` as each is sampled (``_TokenTap``)."""
    torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
    tap = {} if on_token is None else _TokenTap.kwargs(on_token, temperature, stop_ids)
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        top_p=1.0,
        max_new_tokens=max_new_tokens,
        pad_token_id=pad_id,
        eos_token_id=list(stop_ids),
        output_logits=True,
        return_dict_in_generate=True,
        **tap,
    )
    new = out.sequences[:, ids.shape[1] :]
    logits = torch.stack(out.logits, 1).float() / temperature
    logps = torch.log_softmax(logits, -1).gather(2, new[..., None]).squeeze(2)
    return new, logps


class _TokenTap:
    """Each sampled token with its logprob as ``generate`` samples it: a logits processor
    (it sees the step's scores, before the temperature) and a streamer (it gets the ids
    sampled from them); rows past their stop token are not told of their padding."""

    def __init__(self, on_token: Any, temperature: float, stop_ids: tuple[int, ...]) -> None:
        self.on_token, self.temperature, self.stop_ids = on_token, temperature, set(stop_ids)
        self.logp: torch.Tensor | None = None
        self.prompt_seen = False
        self.finished: set[int] = set()

    @classmethod
    def kwargs(cls, on_token: Any, temperature: float, stop_ids: tuple[int, ...]) -> dict[str, Any]:
        from transformers import LogitsProcessorList

        tap = cls(on_token, temperature, stop_ids)
        return {"streamer": tap, "logits_processor": LogitsProcessorList([tap])}

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.logp = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return scores

    def put(self, value: torch.Tensor) -> None:
        if not self.prompt_seen:  # generate's first call: the prompt
            self.prompt_seen = True
            return
        assert self.logp is not None
        tokens = value.view(-1).tolist()
        for row, token in enumerate(tokens):
            if row not in self.finished:
                self.on_token(row, int(token), float(self.logp[row, token]))
                if token in self.stop_ids:
                    self.finished.add(row)

    def end(self) -> None:
        pass
