"""Prefix-stable chat rendering for a checkpoint without a chat template.

The renderer's own protocol is token-in/token-out: ``first(text)`` opens a conversation,
the model samples a reply (ending with a stop token), ``next(text)`` appends what the
environment says next. A chat is rendered the same way: the messages before the first
assistant message are joined into ``first``; each assistant message is the ids the
model sampled for it; the messages after it are joined into ``next``. So the prompt of a
conversation extended by an assistant reply and a new user message begins with the
previous prompt + the sampled ids, exactly, and a trainer (or the capture proxy) links
the turns by prefix.

The sampled ids of an assistant message are looked up in ``SampledTurns``: every reply
the server sends is remembered under (the prompt it answered, the message it became).
A message the server never sent (written by hand, or evicted) is re-encoded from its
text, followed by the stop token.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _calls(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {} if isinstance(call, Mapping) else {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except (TypeError, ValueError):
            args = fn.get("arguments")
        out.append((str(fn.get("name", "")), args))
    return out


def _key(prompt: Sequence[int], message: Mapping[str, Any]) -> bytes:
    """(the prompt, the assistant message) as a digest; tool call ids do not count (each
    SDK may carry them its own way), names and parsed arguments do."""
    h = hashlib.blake2b(digest_size=16)
    h.update(len(prompt).to_bytes(8, "little"))
    h.update(b"".join(int(i).to_bytes(4, "little", signed=True) for i in prompt))
    h.update(json.dumps([_text(message).strip(), _calls(message)], sort_keys=True).encode())
    return h.digest()


class SampledTurns:
    """The ids sampled for recent replies, by (prompt, message); the oldest go first."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[bytes, list[int]] = OrderedDict()

    def remember(self, prompt: Sequence[int], message: Mapping[str, Any], sampled: Sequence[int]) -> None:
        key = _key(prompt, message)
        self._ids[key] = list(sampled)
        self._ids.move_to_end(key)
        while len(self._ids) > self.capacity:
            self._ids.popitem(last=False)

    def get(self, prompt: Sequence[int], message: Mapping[str, Any]) -> list[int] | None:
        return self._ids.get(_key(prompt, message))


def render_turns(renderer: Any, messages: Sequence[Mapping[str, Any]], turns: SampledTurns) -> list[int]:
    """The prompt ids of a chat, built only by extension (see the module's docstring)."""
    ids: list[int] = []
    pending: list[str] = []
    opened = False
    for message in messages:
        if message.get("role") != "assistant":
            pending.append(_text(message))
            continue
        ids += renderer.next("\n".join(pending)) if opened else renderer.first("\n".join(pending))
        opened, pending = True, []
        sampled = turns.get(ids, message)
        if sampled is None:
            sampled = [*_encode(renderer, _text(message)), renderer.stop_ids[0]]
        ids += sampled
    if not opened or pending:
        ids += renderer.next("\n".join(pending)) if opened else renderer.first("\n".join(pending))
    return ids


def _encode(renderer: Any, text: str) -> list[int]:
    if hasattr(renderer, "encode"):
        return list(renderer.encode(text))
    return list(renderer.tok.encode(text, add_special_tokens=False))
