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

import httpx
import orjson

from ._errors import UpstreamError


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
    """An async client of one backend (its base URL ends in ``/v1``)."""

    def __init__(
        self, base_url: str, *, served_model: str = "", api_key: str | None = None, timeout_s: float = 600.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.served_model = served_model
        self.api_key = api_key
        self._chat_url = f"{self.base_url}/chat/completions"
        self._client = httpx.AsyncClient(timeout=timeout_s, limits=httpx.Limits(max_keepalive_connections=64))

    async def aclose(self) -> None:
        await self._client.aclose()

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    async def completion(self, request: dict[str, Any], *, level: str = "tokens") -> dict[str, Any]:
        """One chat completion with the capture parameters of ``level`` (never streamed).

        Raises:
            UpstreamError: the backend is unreachable, answers an error status, or cuts its reply.
        """
        body = {**request, **capture_params(level), "stream": False}
        body.pop("stream_options", None)
        if self.served_model:
            body["model"] = self.served_model
        url = self._chat_url
        try:
            headers = {"content-type": "application/json", **self._headers()}
            reply = await self._client.post(url, content=orjson.dumps(body), headers=headers)
        except httpx.TimeoutException as exc:
            raise UpstreamError(f"the backend at {self.base_url} did not answer in time", status=504) from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"the backend at {self.base_url} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if reply.status_code >= 400:
            raise UpstreamError(
                f"the backend answered {reply.status_code}: {_message(reply)}",
                status=reply.status_code if reply.status_code < 500 else 502,
                backend_status=reply.status_code,
            )
        try:
            data = orjson.loads(reply.content)
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
        body = {**request, **capture_params(level), "stream": True}
        body["stream_options"] = {"include_usage": True}
        if self.served_model:
            body["model"] = self.served_model
        headers = {"content-type": "application/json", **self._headers()}
        req = self._client.build_request("POST", self._chat_url, content=orjson.dumps(body), headers=headers)
        try:
            reply = await self._client.send(req, stream=True)
        except httpx.TimeoutException as exc:
            raise UpstreamError(f"the backend at {self.base_url} did not answer in time", status=504) from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"the backend at {self.base_url} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if reply.status_code >= 400:
            try:
                await reply.aread()
            except httpx.HTTPError:
                pass
            finally:
                await reply.aclose()
            raise UpstreamError(
                f"the backend answered {reply.status_code}: {_message(reply)}",
                status=reply.status_code if reply.status_code < 500 else 502,
                backend_status=reply.status_code,
            )
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
            reply = await self._client.get(f"{self.base_url}/models", headers=self._headers())
            reply.raise_for_status()
            data = reply.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise UpstreamError(f"the backend's model list failed: {exc}") from exc
        return data if isinstance(data, dict) else {"object": "list", "data": []}


def _message(reply: httpx.Response) -> str:
    try:
        err = reply.json().get("error")
        text = err.get("message") if isinstance(err, dict) else err
    except (ValueError, AttributeError):
        text = None
    return str(text or reply.text[:300] or reply.reason_phrase)


class BackendStream:
    """The chunks of one streaming chat completion, parsed; closed when read to the end."""

    def __init__(self, reply: httpx.Response, base_url: str) -> None:
        self._reply, self._base_url = reply, base_url

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """Each ``data:`` chunk up to ``[DONE]``.

        Raises:
            UpstreamError: the stream was cut (no ``[DONE]``), or a chunk is not JSON or is an error.
        """
        try:
            async for line in self._reply.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
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
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"the backend at {self._base_url} failed mid-stream: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            await self._reply.aclose()
        raise UpstreamError(f"the backend at {self._base_url} failed: its stream ended without [DONE]")

    async def aclose(self) -> None:
        await self._reply.aclose()
