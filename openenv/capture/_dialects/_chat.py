"""OpenAI chat completions: forwarded as it is, the capture fields taken off the reply."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ._base import ChatReply, need, pieces, sse
from ._writers import ChatWriter

_SAMPLING = (
    "messages",
    "tools",
    "tool_choice",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "n",
    "presence_penalty",
    "frequency_penalty",
    "parallel_tool_calls",
    "response_format",
    "logprobs",
    "top_logprobs",
    "user",
    "model",
)


class OpenAIChat:
    name = "openai_chat"

    def to_chat(self, body: dict[str, Any], path: str) -> dict[str, Any]:
        need(
            isinstance(body.get("messages"), list) and bool(body["messages"]),
            "'messages' must be a non-empty list",
        )
        need(int(body.get("n") or 1) == 1, "the capture proxy records one choice per call: 'n' must be 1")
        return {k: v for k, v in body.items() if k in _SAMPLING}

    def wants_stream(self, body: dict[str, Any], path: str, query: Mapping[str, str]) -> bool:
        return bool(body.get("stream"))

    def reply(self, chat: ChatReply, body: dict[str, Any]) -> dict[str, Any]:
        """The backend's reply, less the capture fields the agent did not ask for (no deep copy:
        the recorded ids are lists the reply only shares, and nothing here mutates them)."""
        ids, lps = bool(body.get("return_token_ids")), bool(body.get("logprobs"))
        out = {k: v for k, v in chat.raw.items() if ids or k != "prompt_token_ids"}
        choices = []
        for choice in chat.raw.get("choices") or []:
            kept = {k: v for k, v in choice.items() if k != "prompt_token_ids" and (ids or k != "token_ids")}
            if not lps:
                kept["logprobs"] = None
            choices.append(kept)
        out["choices"] = choices
        return out

    def events(self, chat: ChatReply, body: dict[str, Any]) -> Iterator[str]:
        base = {
            "id": chat.id,
            "object": "chat.completion.chunk",
            "created": chat.created,
            "model": chat.model,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            return sse(
                {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
            )

        yield chunk({"role": "assistant", "content": ""})
        for piece in pieces(chat.text):
            yield chunk({"content": piece})
        for i, call in enumerate(chat.tool_calls):
            head = {
                "index": i,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            yield chunk({"tool_calls": [head]})
            for piece in pieces(call.arguments):
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        yield chunk({}, chat.finish_reason)
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "prompt_tokens": chat.prompt_tokens,
                "completion_tokens": chat.completion_tokens,
                "total_tokens": chat.prompt_tokens + chat.completion_tokens,
            }
            yield sse({**base, "choices": [], "usage": usage})
        yield sse("[DONE]")

    def streamer(self, body: dict[str, Any]) -> ChatWriter:
        return ChatWriter(body, self.error)

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {401: "authentication_error", 404: "not_found_error"}.get(status, "invalid_request_error")
        if status >= 500:
            kind = "api_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
