"""``ScriptedModel``: a chat completions server whose replies are scripted (a TEST DOUBLE).

It stands in for a vLLM server so a real agent CLI can be run deterministically through
the capture proxy: the first reply of a conversation runs ``command`` (a call of the
shell tool the agent offers, or, when it offers none, the command in a fenced ``bash``
block as mini-swe-agent reads it); every later reply ends the run (plain text, or
mini-swe-agent's ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``). Nothing is sampled.

Token ids are the reply's UTF-8 bytes (0-255) and four specials, so every id list
decodes without a tokenizer (``decode``). A chat renders as, per message,
``<start> role <sep> text <end>``, then ``<start> assistant <sep>``; a reply is its bytes
then ``<end>``, with a logprob per id: the ``tokens`` capture level, trainable.
It answers ``POST /v1/chat/completions`` (streamed or not) and ``GET /v1/models``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = ["FINISH_MINI", "ScriptedModel", "chat_completion", "decode", "logprob"]

START, SEP, END, TOOLS = 256, 257, 258, 259
#: What mini-swe-agent reads as "the task is done".
FINISH_MINI = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
#: Shell tools of the agents run here, by the name each gives it: how its arguments look.
_SHELL_TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Bash": lambda cmd: {"command": cmd, "description": "Run the task's command"},  # Claude Code
    "bash": lambda cmd: {"command": cmd, "description": "Run the task's command"},  # OpenCode, mini v2
    "shell": lambda cmd: {"command": ["bash", "-lc", cmd]},  # Codex CLI
    "shell_command": lambda cmd: {"command": cmd},  # Codex CLI (newer)
    "exec_command": lambda cmd: {"cmd": cmd},  # Codex CLI (unified exec)
    "run_shell_command": lambda cmd: {"command": cmd, "description": "Run the task's command"},  # Gemini CLI
}


def decode(ids: list[int]) -> str:
    """The text of scripted token ids (specials dropped)."""
    return bytes(i for i in ids if i < 256).decode()


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _message_text(m: dict[str, Any]) -> str:
    """A message as the model sees it: its text, then each tool call as canonical JSON
    (the same whether the agent sends the arguments back re-spaced or not)."""
    text = _text(m.get("content"))
    for call in m.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = fn.get("arguments")
        text += json.dumps({"name": fn.get("name"), "arguments": args}, sort_keys=True)
    return text


def _render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
    ids: list[int] = []
    if tools:
        names = [t.get("function", {}).get("name", "") for t in tools]
        ids += [TOOLS, *json.dumps(names).encode(), END]
    for m in messages:
        ids += [START, *str(m.get("role", "")).encode(), SEP, *_message_text(m).encode(), END]
    return [*ids, START, *b"assistant", SEP]


def logprob(i: int, token: int) -> float:
    """The scripted logprob of sampled id ``token`` at position ``i``."""
    return -((token * 7 + i) % 13) / 10 - 0.01


class ScriptedModel:
    """The app (``app``) and what it saw (``calls``: every request body, in order).

    ``command``: what the first reply runs; ``answer``: the final reply's text where
    the agent has tools; ``tool``: ``(name, arguments)``, a tool the first reply calls
    instead when the agent offers it (by that name, or as MCP server ``env``'s:
    ``mcp__env__NAME``, ``env__NAME``), an env tool given over MCP.
    """

    def __init__(
        self,
        command: str,
        *,
        answer: str = "Done.",
        model: str = "scripted",
        tool: tuple[str, dict[str, Any]] | None = None,
    ) -> None:
        self.command, self.answer, self.model, self.tool = command, answer, model, tool
        self.url = ""  # where it is served, for whoever serves it
        self.calls: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The scripted assistant message for this transcript."""
        first = not any(m.get("role") in ("assistant", "tool") for m in messages)
        names = [t.get("function", {}).get("name") for t in tools or []]
        shell = next((n for n in _SHELL_TOOLS if n in names), None)
        # mini-swe-agent ends a run on a command of its own, which its prompt names
        mini = any(FINISH_MINI.split()[1] in _text(m.get("content")) for m in messages)
        cmd = self.command if first else FINISH_MINI
        env_tool = self._env_tool(names) if first else None
        if env_tool is not None:
            return _call(f"call_{len(self.calls)}", env_tool, json.dumps(self.tool[1] if self.tool else {}))
        if shell is None:  # no shell tool: mini-swe-agent's text protocol (1.x)
            return {"role": "assistant", "content": f"THOUGHT: run it.\n\n```bash\n{cmd}\n```"}
        if not first and not mini:
            return {"role": "assistant", "content": self.answer}
        return _call(f"call_{len(self.calls)}", shell, json.dumps(_SHELL_TOOLS[shell](cmd)))

    def _env_tool(self, names: list[Any]) -> str | None:
        """The name the agent gives ``tool``, if it offers it."""
        if self.tool is None:
            return None
        wanted = self.tool[0]
        return next((n for n in names if n in (wanted, f"mcp__env__{wanted}", f"env__{wanted}")), None)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.calls.append(body)
        tools = body.get("tools")
        message = self.reply(body.get("messages") or [], tools)
        prompt = _render(body.get("messages") or [], tools)
        sampled = [*_message_text(message).encode(), END]
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        logprobs = {
            "content": [
                {"token": f"token_id:{t}", "logprob": logprob(i, t), "top_logprobs": []}
                for i, t in enumerate(sampled)
            ]
        }
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        out = chat_completion(f"chatcmpl-{len(self.calls)}", self.model, choice, len(prompt), len(sampled))
        if body.get("logprobs"):
            choice["logprobs"] = logprobs
        if body.get("return_token_ids"):
            choice["token_ids"] = sampled
            out["prompt_token_ids"] = prompt
        if not body.get("stream"):
            return JSONResponse(out)
        return StreamingResponse(iter(_chunks(out, message, body)), media_type="text/event-stream")


def chat_completion(
    reply_id: str, model: str, choice: dict[str, Any], prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    """A chat completions reply of one ``choice`` (the caller adds ids and logprobs)."""
    return {
        "id": reply_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _chunks(out: dict[str, Any], message: dict[str, Any], body: dict[str, Any]) -> list[str]:
    """The reply as vLLM streams it: ids on the first chunk, then the content with its ids."""
    head = {
        "id": out["id"],
        "object": "chat.completion.chunk",
        "created": out["created"],
        "model": out["model"],
    }
    choice = out["choices"][0]
    first: dict[str, Any] = {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    if "prompt_token_ids" in out:
        first["prompt_token_ids"] = out["prompt_token_ids"]
    delta: dict[str, Any] = {"content": message["content"]} if message["content"] else {}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
    body_choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
    if "token_ids" in choice:
        body_choice["token_ids"] = choice["token_ids"]
    if "logprobs" in choice:
        body_choice["logprobs"] = choice["logprobs"]
    last = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    chunks = [first, {**head, "choices": [body_choice]}, last]
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**head, "choices": [], "usage": out["usage"]})
    return [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
