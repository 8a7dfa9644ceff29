"""Renderers: observation text -> the token ids appended to a conversation.

Token-in/token-out: a conversation is only ever extended. ``first(text)`` gives the ids
of the opening prompt, ``next(text)`` the ids of an env reply that follows a turn the
model ended with a stop token; neither re-tokenises earlier turns, so the trainer sees
exactly the ids the sampler produced.

The ``tiny`` preset uses ``CharRenderer``: one token per character of a fixed alphabet
read from ``tiny_alphabet.txt`` shipped with this package (built locally, no download).
"""

from __future__ import annotations

from importlib import resources
from typing import Any, Protocol

PAD, BOS, EOS, UNK, TURN = "<pad>", "<bos>", "<eos>", "<unk>", "<turn>"
SPECIALS = (PAD, BOS, EOS, UNK, TURN)


class Renderer(Protocol):
    pad_id: int
    stop_ids: tuple[int, ...]

    def first(self, text: str) -> list[int]: ...

    def next(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


def tiny_alphabet() -> str:
    """The characters of the ``tiny`` vocabulary, in order, without repeats."""
    text = resources.files(__package__).joinpath("tiny_alphabet.txt").read_text(encoding="utf-8")
    return "".join(dict.fromkeys(text.replace("\n", "")))


class CharRenderer:
    """Character-level: ``<bos> prompt <turn>`` then ``reply <turn>`` after each ``<eos>``.

    Ids 0-4 are ``<pad> <bos> <eos> <unk> <turn>``; upper case folds to lower case and
    characters outside the alphabet become ``<unk>``.
    """

    def __init__(self, alphabet: str | None = None) -> None:
        self.alphabet = tiny_alphabet() if alphabet is None else alphabet
        self._ids = {ch: i + len(SPECIALS) for i, ch in enumerate(self.alphabet)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id, self.turn_id = range(len(SPECIALS))
        self.stop_ids: tuple[int, ...] = (self.eos_id,)

    @property
    def vocab_size(self) -> int:
        return len(SPECIALS) + len(self.alphabet)

    def encode(self, text: str) -> list[int]:
        return [self._ids.get(ch, self.unk_id) for ch in text.lower()]

    def decode(self, ids: list[int]) -> str:
        """Text of ``ids``; special tokens are dropped."""
        n = len(SPECIALS)
        return "".join(self.alphabet[i - n] for i in ids if n <= i < self.vocab_size)

    def first(self, text: str) -> list[int]:
        return [self.bos_id, *self.encode(text), self.turn_id]

    def next(self, text: str) -> list[int]:
        return [*self.encode(text), self.turn_id]


class HFRenderer:
    """A Hugging Face tokenizer with a chat template, extended by fixed-base deltas.

    ``next`` renders ``[user, assistant, user(text)]`` and keeps what follows the first
    two messages (plus whatever the template puts after the assistant's stop token,
    e.g. a newline), so earlier turns are never re-tokenised.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.pad_id = int(tokenizer.pad_token_id)
        self.stop_ids: tuple[int, ...] = (int(tokenizer.eos_token_id),)
        self.vocab_size = len(tokenizer)
        self._chat = getattr(tokenizer, "chat_template", None) is not None
        base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
        self._base = base
        if self._chat:
            base_ids = self._template(base, generation_prompt=False)
            # What the template adds after the assistant's stop token (not sampled by the model).
            stops = [i for i, t in enumerate(base_ids) if t in self.stop_ids]
            self._after_stop = base_ids[stops[-1] + 1 :] if stops else []
            self._base_len = len(base_ids)

    def _template(self, messages: list[dict[str, str]], *, generation_prompt: bool) -> list[int]:
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def decode(self, ids: list[int]) -> str:
        return str(self.tok.decode(ids, skip_special_tokens=True))

    def first(self, text: str) -> list[int]:
        if not self._chat:
            bos = [self.tok.bos_token_id] if self.tok.bos_token_id is not None else []
            return bos + list(self.tok.encode(text, add_special_tokens=False))
        return self._template([{"role": "user", "content": text}], generation_prompt=True)

    def next(self, text: str) -> list[int]:
        if not self._chat:
            return list(self.tok.encode(text, add_special_tokens=False))
        full = self._template([*self._base, {"role": "user", "content": text}], generation_prompt=True)
        return self._after_stop + full[self._base_len :]
