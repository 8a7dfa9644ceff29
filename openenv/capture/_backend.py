"""The backend: any OpenAI-compatible chat completions server.

Every agent call goes to ``{llm_url}/chat/completions``: one non-streaming request, or,
when the agent streams, a streaming one (``open_stream``) whose chunks carry the same
fields per delta as vLLM sends them (``prompt_token_ids`` on the first chunk, the
choice's ``token_ids`` and ``logprobs.content`` per chunk). At the ``tokens`` level it
asks, the way vLLM takes it, for ``return_token_ids`` and ``logprobs`` (``top_logprobs:
0``), and reads back ``prompt_token_ids`` (top level, or
on the first choice as SGLang puts it), ``choices[0].token_ids`` and
``choices[0].logprobs.content[].logprob``. ``probe`` finds which level a backend
gives: ``tokens`` (ids and logprobs: trainable), ``logprobs`` or ``text``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson

from ._errors import UpstreamError
from ._http import HttpError, HttpPool, Response


@dataclass
class Capture:
    """What one backend reply says about its tokens (empty where the backend said nothing)."""

    prompt_ids: list[int]
    sampled_ids: list[int]
    logprobs: list[float] | None

    @property
    def level(self) -> str:
        if self.prompt_ids and self.logprobs is not None and len(self.logprobs) == len(self.sampled_ids):
            return "tokens"
        return "logprobs" if self.logprobs is not None else "text"


def read_capture(response: dict[str, Any]) -> Capture:
    """The prompt ids, sampled ids and logprobs in a chat completion (vLLM's fields)."""
    choice = (response.get("choices") or [{}])[0]
    prompt = response.get("prompt_token_ids") or choice.get("prompt_token_ids") or []
    sampled = choice.get("token_ids") or []
    content = (choice.get("logprobs") or {}).get("content")
    logprobs = [float(e["logprob"]) for e in content] if isinstance(content, list) else None
    return Capture([int(i) for i in prompt], [int(i) for i in sampled], logprobs)


def capture_params(level: str) -> dict[str, Any]:
    """What a request adds to be captured at ``level``."""
    if level == "tokens":
        return {"return_token_ids": True, "logprobs": True, "top_logprobs": 0}
    if level == "logprobs":
        return {"logprobs": True, "top_logprobs": 0}
    return {}


class InferenceClient:
    """An async client of one backend (its base URL ends in ``/v1``), over one
    keep-alive connection pool (``_http.HttpPool``); the request heads are built once."""

    def __init__(
        self, base_url: str, *, served_model: str = "", api_key: str | None = None, timeout_s: float = 600.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.served_model = served_model
        self.api_key = api_key
        self._pool = HttpPool(self.base_url, timeout_s=timeout_s)
        auth = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._chat_head = self._pool.head(
            "POST", "/chat/completions", {"content-type": "application/json", **auth}
        )
        self._models_head = self._pool.head("GET", "/models", auth)

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def _send(self, head: bytes, body: bytes = b"") -> Response:
        try:
            reply = await self._pool.request(head, body)
        except HttpError as exc:
            if exc.kind.endswith("Timeout"):
                raise UpstreamError(
                    f"the backend at {self.base_url} did not answer in time", status=504
                ) from exc
            raise UpstreamError(f"the backend at {self.base_url} failed: {exc}") from exc
        if reply.status >= 400:
            try:
                content = await reply.read()
            except HttpError:
                content = b""
            raise UpstreamError(
                f"the backend answered {reply.status}: {_message(content, reply.status)}",
                status=reply.status if reply.status < 500 else 502,
                backend_status=reply.status,
            )
        return reply

    def _body(self, request: dict[str, Any], level: str, *, stream: bool) -> bytes:
        body = {**request, **capture_params(level), "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        else:
            body.pop("stream_options", None)
        if self.served_model:
            body["model"] = self.served_model
        return orjson.dumps(body)

    async def completion(self, request: dict[str, Any], *, level: str = "tokens") -> dict[str, Any]:
        """One chat completion with the capture parameters of ``level`` (never streamed).

        Raises:
            UpstreamError: the backend is unreachable, answers an error status, or cuts its reply.
        """
        reply = await self._send(self._chat_head, self._body(request, level, stream=False))
        try:
            content = await reply.read()
        except HttpError as exc:
            raise UpstreamError(f"the backend at {self.base_url} failed: {exc}") from exc
        try:
            data = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise UpstreamError("the backend's reply is not JSON") from exc
        if not isinstance(data, dict) or not data.get("choices"):
            raise UpstreamError("the backend's reply has no choices")
        return data

    async def open_stream(self, request: dict[str, Any], *, level: str = "tokens") -> BackendStream:
        """A streaming chat completion, its status read (the body not yet).

        Raises:
            UpstreamError: the backend is unreachable or answers an error status.
        """
        reply = await self._send(self._chat_head, self._body(request, level, stream=True))
        return BackendStream(reply, self.base_url)

    async def probe(self) -> str:
        """The capture level this backend gives: one 1-token call asking for everything."""
        request = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, "temperature": 0}
        try:
            data = await self.completion(request, level="tokens")
        except UpstreamError as exc:
            if exc.backend_status != 400:  # 400: it refuses the capture parameters, try without
                raise
            data = await self.completion(request, level="text")
        return read_capture(data).level

    async def list_models(self) -> dict[str, Any]:
        try:
            reply = await self._send(self._models_head)
            data = orjson.loads(await reply.read())
        except (HttpError, UpstreamError, orjson.JSONDecodeError) as exc:
            raise UpstreamError(f"the backend's model list failed: {exc}") from exc
        return data if isinstance(data, dict) else {"object": "list", "data": []}


def _message(content: bytes, status: int) -> str:
    try:
        err = orjson.loads(content).get("error")
        text = err.get("message") if isinstance(err, dict) else err
    except (orjson.JSONDecodeError, AttributeError):
        text = None
    return str(text or content[:300].decode("utf-8", "replace") or f"status {status}")


class BackendStream:
    """The chunks of one streaming chat completion, parsed; closed when read to the end."""

    def __init__(self, reply: Response, base_url: str) -> None:
        self._reply, self._base_url = reply, base_url

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """Each ``data:`` chunk up to ``[DONE]``.

        Raises:
            UpstreamError: the stream was cut (no ``[DONE]``), or a chunk is not JSON or is an error.
        """
        rest, done = b"", False
        try:
            async for piece in self._reply.stream():
                if done:
                    continue  # the end of the body after [DONE]: read so the connection is reused
                lines = (rest + piece).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        done = True
                        break
                    try:
                        chunk = orjson.loads(data)
                    except orjson.JSONDecodeError as exc:
                        raise UpstreamError("the backend sent a chunk that is not JSON") from exc
                    if isinstance(chunk, dict) and chunk.get("error"):
                        err = chunk["error"]
                        text = err.get("message") if isinstance(err, dict) else err
                        raise UpstreamError(f"the backend's stream failed: {text}")
                    if isinstance(chunk, dict):
                        yield chunk
        except HttpError as exc:
            raise UpstreamError(f"the backend at {self._base_url} failed mid-stream: {exc}") from exc
        finally:
            self._reply.close()
        if not done:
            raise UpstreamError(f"the backend at {self._base_url} failed: its stream ended without [DONE]")

    async def aclose(self) -> None:
        self._reply.close()
