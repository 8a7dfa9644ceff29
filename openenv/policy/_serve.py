"""An OpenAI-compatible server over a local checkpoint (``openenv policy serve``).

Routes: ``GET /health``, ``GET /v1/models`` and ``POST /v1/chat/completions`` (``stream`` as server-sent
events, ``tools`` with tool calls parsed from ``<tool_call>{...}</tool_call>`` in the
model's text, ``stop``, ``n``, ``max_tokens`` / ``max_completion_tokens``,
``temperature``, ``logprobs``). Like vLLM, each choice also carries the sampled
``token_ids`` and the response the ``prompt_token_ids`` when the request says
``return_token_ids: true``; ``logprobs: true`` gives each sampled token's logprob. A
stream sends them per chunk as vLLM does (``prompt_token_ids`` on the first chunk, then
one chunk per token as it is sampled, with its ``token_ids`` and ``logprobs``). Without a chat
template a chat renders prefix-stable (``_turns``): a reply the server sent comes back
as the ids it sampled, so turn k+1's prompt begins with turn k's prompt + sampled ids.
Concurrent requests are sampled in batches (``LocalModel``). With ``api_key`` a
request without ``Authorization: Bearer <key>`` is answered 401 as OpenAI does.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._keepalive import SERVER_KEEP_ALIVE_S
from ._chat import _TOOL_CALL, parse_tool_calls
from ._local import LocalModel


def _error(
    status: int, message: str, kind: str = "invalid_request_error", code: str | None = None
) -> Response:
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}}, status)


class _Completion:
    """One sampled choice, read into what the API returns."""

    def __init__(self, model: LocalModel, ids: list[int], logps: list[float], stops: list[str], tools: bool):
        stop_ids = set(model.renderer.stop_ids)
        ended = bool(ids) and ids[-1] in stop_ids
        self.ids, self.logps = ids, logps
        body = ids[:-1] if ended else ids
        text = model.decode(body)
        self.finish = "stop" if ended else "length"
        for stop in stops:
            if stop and stop in text:
                text, self.finish = text[: text.index(stop)], "stop"
        self.tool_calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:16]}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in (parse_tool_calls(text) if tools else [])
        ]
        if self.tool_calls:
            text = _TOOL_CALL.sub("", text).strip()
            self.finish = "tool_calls"
        self.text = text
        self.tokens = [model.token_text(i) for i in ids]

    def message(self) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": self.text if (self.text or not self.tool_calls) else None,
            **({"tool_calls": self.tool_calls} if self.tool_calls else {}),
        }

    def logprobs(self) -> dict[str, Any]:
        return {
            "content": [
                {"token": tok, "logprob": lp, "bytes": list(tok.encode()), "top_logprobs": []}
                for tok, lp in zip(self.tokens, self.logps, strict=True)
            ]
        }


class _Server:
    def __init__(self, model: LocalModel, name: str, api_key: str | None) -> None:
        self.model, self.name, self.api_key = model, name, api_key

    def authorized(self, request: Request) -> bool:
        return self.api_key is None or request.headers.get("authorization") == f"Bearer {self.api_key}"

    async def models(self, request: Request) -> Response:
        if not self.authorized(request):
            return _error(401, "Incorrect API key provided.", code="invalid_api_key")
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": self.name, "object": "model", "created": 0, "owned_by": "openenv"}],
            }
        )

    async def chat(self, request: Request) -> Response:
        if not self.authorized(request):
            return _error(401, "Incorrect API key provided.", code="invalid_api_key")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(400, "'messages' must be a non-empty list")
        n = int(body.get("n") or 1)
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 256)
        temperature = float(body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0)
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else list(stops)
        tools = body.get("tools") or None
        if n < 1 or max_tokens < 1:
            return _error(400, "'n' and 'max_tokens' must be at least 1")
        try:
            prompt = self.model.render(messages, tools)
        except Exception as exc:
            return _error(400, f"cannot render the messages: {exc}")
        limit = self.model.context_len
        if limit is not None and len(prompt) >= limit:  # no room for one token: vLLM's 400
            return _error(
                400,
                f"This model's maximum context length is {limit} tokens; the messages are {len(prompt)}",
                code="context_length_exceeded",
            )
        max_tokens = max_tokens if limit is None else min(max_tokens, limit - len(prompt))
        if body.get("stream"):
            live = _Live(self, body, prompt, n, max_tokens, temperature, stops, bool(tools))
            return StreamingResponse(live.chunks(), media_type="text/event-stream")
        outs = await asyncio.gather(
            *(
                self.model.generate(prompt, max_new_tokens=max_tokens, temperature=temperature)
                for _ in range(n)
            )
        )
        choices = [_Completion(self.model, list(i), list(lp), stops, bool(tools)) for i, lp in outs]
        for c in choices:
            self.model.remember(prompt, c.message(), c.ids)
        return JSONResponse(self.response(body, prompt, choices))

    def response(
        self, body: Mapping[str, Any], prompt: list[int], choices: list[_Completion]
    ) -> dict[str, Any]:
        want_ids, want_lp = bool(body.get("return_token_ids")), bool(body.get("logprobs"))
        out: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [
                {
                    "index": i,
                    "message": c.message(),
                    "finish_reason": c.finish,
                    "logprobs": c.logprobs() if want_lp else None,
                    **({"token_ids": c.ids} if want_ids else {}),
                }
                for i, c in enumerate(choices)
            ],
            "usage": self.usage(prompt, choices),
        }
        if want_ids:
            out["prompt_token_ids"] = prompt
        return out

    def usage(self, prompt: list[int], choices: list[_Completion]) -> dict[str, int]:
        completion = sum(len(c.ids) for c in choices)
        return {
            "prompt_tokens": len(prompt),
            "completion_tokens": completion,
            "total_tokens": len(prompt) + completion,
        }


class _Live:
    """A ``stream: true`` reply, sent as the tokens are sampled (vLLM's chunks): a first
    chunk per choice (with ``prompt_token_ids`` when asked), then one chunk per sampled
    token as the sampler makes it, with its text piece and, when asked, its
    ``token_ids`` and ``logprobs``; choices interleave by ``index``. Where the text may
    yet turn out to be a tool call or to hold a stop string (``tools`` or ``stop`` in the
    request), the token chunks carry their ids and logprobs but no text, and the text and
    the tool calls follow the last token. Then each choice's ``finish_reason``, the usage
    when asked, and ``[DONE]``."""

    def __init__(
        self,
        server: _Server,
        body: Mapping[str, Any],
        prompt: list[int],
        n: int,
        max_tokens: int,
        temperature: float,
        stops: list[str],
        tools: bool,
    ) -> None:
        self.server, self.model, self.body, self.prompt = server, server.model, body, prompt
        self.n, self.max_tokens, self.temperature = n, max_tokens, temperature
        self.stops, self.tools = stops, tools
        self.want_ids, self.want_lp = bool(body.get("return_token_ids")), bool(body.get("logprobs"))
        self.base = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": server.name,
        }
        self.sampled: list[list[int]] = [[] for _ in range(n)]
        self.shown = [0] * n  # characters of each choice's text sent so far

    def chunk(self, index: int, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        top = extra.pop("top", {})
        choice = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None, **extra}
        return "data: " + json.dumps({**self.base, **top, "choices": [choice]}) + "\n\n"

    async def chunks(self) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[int, int, float]] = asyncio.Queue()

        def told(index: int) -> Any:
            def on_token(token: int, logprob: float) -> None:
                loop.call_soon_threadsafe(events.put_nowait, (index, token, logprob))

            return on_token

        runs = [
            loop.create_task(
                self.model.generate(
                    self.prompt,
                    max_new_tokens=self.max_tokens,
                    temperature=self.temperature,
                    on_token=told(i),
                )
            )
            for i in range(self.n)
        ]
        everything: asyncio.Future[Any] = asyncio.gather(*runs)
        try:
            for i in range(self.n):
                top = {"prompt_token_ids": self.prompt} if self.want_ids else {}
                yield self.chunk(i, {"role": "assistant", "content": ""}, top=top)
            while not everything.done() or not events.empty():
                if events.empty():
                    waiting: asyncio.Future[Any] = loop.create_task(events.get())
                    await asyncio.wait([waiting, everything], return_when=asyncio.FIRST_COMPLETED)
                    if not waiting.done():
                        waiting.cancel()
                        continue  # all sampled: what is queued is sent below
                    event = waiting.result()
                else:
                    event = events.get_nowait()
                yield self.token_chunk(*event)
            outs = everything.result()
        finally:
            if not everything.done():  # the client went away: the sampling finishes on its own
                everything.add_done_callback(lambda f: f.cancelled() or f.exception())
        choices = [_Completion(self.model, list(ids), list(lp), self.stops, self.tools) for ids, lp in outs]
        for i, c in enumerate(choices):
            self.model.remember(self.prompt, c.message(), c.ids)
            rest = c.text[self.shown[i] :] if not c.tool_calls else c.text
            if rest:
                yield self.chunk(i, {"content": rest})
            for j, call in enumerate(c.tool_calls):
                yield self.chunk(i, {"tool_calls": [{"index": j, **call}]})
            yield self.chunk(i, {}, c.finish)
        if (self.body.get("stream_options") or {}).get("include_usage"):
            usage = self.server.usage(self.prompt, choices)
            yield "data: " + json.dumps({**self.base, "choices": [], "usage": usage}) + "\n\n"
        yield "data: [DONE]\n\n"

    def token_chunk(self, index: int, token: int, logprob: float) -> str:
        self.sampled[index].append(token)
        piece = "" if (self.tools or self.stops) else self.piece(index)
        extra: dict[str, Any] = {"token_ids": [token]} if self.want_ids else {}
        if self.want_lp:
            text = self.model.token_text(token)
            entry = {"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": []}
            extra["logprobs"] = {"content": [entry]}
        return self.chunk(index, {"content": piece}, **extra)

    def piece(self, index: int) -> str:
        """What the newest token adds to the decoded text (held back while it decodes to
        a partial character)."""
        ids = self.sampled[index]
        body = ids[:-1] if ids[-1] in self.model.renderer.stop_ids else ids
        text = self.model.decode(body)
        if text.endswith("\ufffd") or len(text) < self.shown[index]:
            return ""
        piece, self.shown[index] = text[self.shown[index] :], len(text)
        return piece


def serve_app(model: LocalModel, *, model_name: str | None = None, api_key: str | None = None) -> Starlette:
    """The ASGI app of ``openenv policy serve`` over a loaded ``LocalModel``."""
    server = _Server(model, model_name or model.checkpoint, api_key)
    return Starlette(
        routes=[
            Route("/health", lambda request: JSONResponse({"status": "healthy"}), methods=["GET"]),
            Route("/v1/models", server.models, methods=["GET"]),
            Route("/v1/chat/completions", server.chat, methods=["POST"]),
        ]
    )


def run_server(
    model: LocalModel, *, host: str, port: int, model_name: str | None = None, api_key: str | None = None
) -> None:
    """Serve until interrupted (uvicorn)."""
    import uvicorn

    uvicorn.run(
        serve_app(model, model_name=model_name, api_key=api_key),
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=SERVER_KEEP_ALIVE_S,
    )
