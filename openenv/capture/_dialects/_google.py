"""Google generateContent (``POST /v1beta/models/{model}:generateContent``, streaming on
``:streamGenerateContent?alt=sse``), read into chat completions and written back.

``contents`` turns (``user`` / ``model``) hold ``text``, ``functionCall`` and
``functionResponse`` parts; ``systemInstruction`` is the system message;
``functionDeclarations`` become chat tools; ``generationConfig`` gives the sampling.
A function call's id is carried when the client sends one, else made from its name.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .._detection import google_model
from .._errors import BadRequest
from ._base import ChatReply, need, pieces, sse
from ._writers import GoogleWriter

_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    504: "DEADLINE_EXCEEDED",
}


def _turn(role: str, parts: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    text = "".join(p.get("text", "") for p in parts if "text" in p and not p.get("thought"))
    calls = [
        {
            "id": p["functionCall"].get("id") or f"call_{n}_{i}",
            "type": "function",
            "function": {
                "name": p["functionCall"].get("name"),
                "arguments": json.dumps(p["functionCall"].get("args") or {}),
            },
        }
        for i, p in enumerate(parts)
        if "functionCall" in p
    ]
    results = [
        {
            "role": "tool",
            "tool_call_id": p["functionResponse"].get("id") or p["functionResponse"].get("name"),
            "content": json.dumps(p["functionResponse"].get("response") or {}),
        }
        for p in parts
        if "functionResponse" in p
    ]
    chat_role = "assistant" if role == "model" else "user"
    if not (text or calls) and results:
        return results
    message: dict[str, Any] = {"role": chat_role, "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return [*results, message]


class GoogleGenerateContent:
    name = "google"

    def to_chat(self, body: dict[str, Any], path: str) -> dict[str, Any]:
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise BadRequest("contents must be a non-empty list")
        messages: list[dict[str, Any]] = []
        system = body.get("systemInstruction") or body.get("system_instruction")
        if system:
            parts = system.get("parts", []) if isinstance(system, dict) else [{"text": str(system)}]
            messages.append({"role": "system", "content": "".join(p.get("text", "") for p in parts)})
        for n, turn in enumerate(contents):
            need(isinstance(turn, dict) and isinstance(turn.get("parts"), list), "each content needs parts")
            messages += _turn(turn.get("role", "user"), turn["parts"], n)
        chat: dict[str, Any] = {"model": google_model(path), "messages": messages}
        decls = [
            d
            for t in body.get("tools") or []
            for d in t.get("functionDeclarations") or t.get("function_declarations") or []
        ]
        if decls:
            chat["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": d["name"],
                        "description": d.get("description", ""),
                        "parameters": d.get("parameters") or d.get("parametersJsonSchema") or {},
                    },
                }
                for d in decls
            ]
        config = body.get("generationConfig") or body.get("generation_config") or {}
        for src, dst in (
            ("maxOutputTokens", "max_tokens"),
            ("temperature", "temperature"),
            ("topP", "top_p"),
            ("stopSequences", "stop"),
            ("seed", "seed"),
        ):
            if config.get(src) is not None:
                chat[dst] = config[src]
        return chat

    def wants_stream(self, body: dict[str, Any], path: str, query: Mapping[str, str]) -> bool:
        return path.split("?", 1)[0].endswith(":streamGenerateContent")

    def _parts(self, chat: ChatReply) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = [{"text": chat.text}] if chat.text else []
        parts += [{"functionCall": {"id": c.id, "name": c.name, "args": c.args()}} for c in chat.tool_calls]
        return parts

    def _response(self, chat: ChatReply, parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        usage = {
            "promptTokenCount": chat.prompt_tokens,
            "candidatesTokenCount": chat.completion_tokens,
            "totalTokenCount": chat.prompt_tokens + chat.completion_tokens,
        }
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": chat.model,
            "responseId": chat.id,
        }

    def reply(self, chat: ChatReply, body: dict[str, Any]) -> dict[str, Any]:
        return self._response(chat, self._parts(chat), _FINISH.get(chat.finish_reason, "STOP"))

    def events(self, chat: ChatReply, body: dict[str, Any]) -> Iterator[str]:
        texts = pieces(chat.text)
        calls = [{"functionCall": {"id": c.id, "name": c.name, "args": c.args()}} for c in chat.tool_calls]
        for piece in texts[:-1] if not calls else texts:
            yield sse(self._response(chat, [{"text": piece}], None))
        last: list[dict[str, Any]] = calls or ([{"text": texts[-1]}] if texts else [])
        yield sse(self._response(chat, last, _FINISH.get(chat.finish_reason, "STOP")))

    def finish(self, reason: str) -> str:
        return _FINISH.get(reason, "STOP")

    def streamer(self, body: dict[str, Any]) -> GoogleWriter:
        return GoogleWriter(self, body)

    def error(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "INTERNAL")}}
