"""A streamed backend reply, read chunk by chunk: what each chunk adds, and the whole.

``StreamState.feed`` takes one chat completion chunk (vLLM's fields: ``prompt_token_ids``
on the first chunk, a choice's ``token_ids`` and ``logprobs.content`` per chunk), keeps
its ids, logprobs, text and tool calls, and says what it added as ``Delta``s, which the
dialects' stream writers translate as they arrive. ``raw()`` is the reply as one
non-streamed chat completion, read by ``ChatReply.read`` and ``read_capture`` as a
non-streamed one is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Delta:
    """What one chunk added: ``text`` (a piece of content), ``call`` (tool call ``index``
    starts: ``id``, ``name``) or ``args`` (a piece of call ``index``'s arguments)."""

    kind: str
    text: str = ""
    index: int = 0


class StreamState:
    """Everything the chunks of one streamed reply said, so far."""

    def __init__(self) -> None:
        self.id = ""
        self.model = ""
        self.created = 0
        self.prompt_ids: list[int] = []
        self.sampled_ids: list[int] = []
        self.logprobs: list[float] | None = None
        self.text: list[str] = []
        self.calls: list[dict[str, Any]] = []  # {"id", "name", "arguments": [pieces]}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.chunks = 0

    def feed(self, chunk: dict[str, Any]) -> list[Delta]:
        self.chunks += 1
        if not self.id:
            self.id = str(chunk.get("id") or "")
            self.model = str(chunk.get("model") or "")
            self.created = int(chunk.get("created") or time.time())
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        prompt = chunk.get("prompt_token_ids")
        out: list[Delta] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            prompt = prompt or choice.get("prompt_token_ids")
            ids = choice.get("token_ids")
            if ids:
                self.sampled_ids += ids
            content = (choice.get("logprobs") or {}).get("content")
            if isinstance(content, list):
                if self.logprobs is None:
                    self.logprobs = []
                self.logprobs += [float(e["logprob"]) for e in content]
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.text.append(delta["content"])
                out.append(Delta("text", delta["content"]))
            for call in delta.get("tool_calls") or ():
                out += self._call(call)
        if prompt and not self.prompt_ids:
            self.prompt_ids = list(prompt)
        return out

    def _call(self, call: dict[str, Any]) -> list[Delta]:
        index = int(call.get("index", len(self.calls)))
        fn = call.get("function") or {}
        out: list[Delta] = []
        while len(self.calls) <= index:
            self.calls.append({"id": "", "name": "", "arguments": []})
        held = self.calls[index]
        if not held["name"] and (call.get("id") or fn.get("name")):
            held["id"] = call.get("id") or f"call_{self.id}_{index}"
            held["name"] = fn.get("name") or ""
            out.append(Delta("call", index=index))
        if fn.get("arguments"):
            held["arguments"].append(fn["arguments"])
            out.append(Delta("args", fn["arguments"], index))
        return out

    def call_head(self, index: int) -> tuple[str, str]:
        held = self.calls[index]
        return held["id"], held["name"]

    def raw(self) -> dict[str, Any]:
        """The reply as one non-streamed chat completion (vLLM's capture fields included)."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": "".join(c["arguments"]) or "{}"},
                }
                for c in self.calls
            ]
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": self.finish_reason or "stop",
            "logprobs": None
            if self.logprobs is None
            else {"content": [{"logprob": x} for x in self.logprobs]},
        }
        if self.sampled_ids:
            choice["token_ids"] = self.sampled_ids
        usage = self.usage or {
            "prompt_tokens": len(self.prompt_ids),
            "completion_tokens": len(self.sampled_ids),
            "total_tokens": len(self.prompt_ids) + len(self.sampled_ids),
        }
        out: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": usage,
        }
        if self.prompt_ids:
            out["prompt_token_ids"] = self.prompt_ids
        return out
