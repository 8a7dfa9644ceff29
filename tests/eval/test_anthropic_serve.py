"""The official ``anthropic`` SDK, async, streaming, with tool use, against ``openenv
policy serve`` over a real local checkpoint. Policy serve speaks the OpenAI
API; the Messages API in front of it is the capture proxy's (``openenv.capture``), as an
agent harness sees it. The checkpoint is the one tests/policy and tests/eval share
(``tool_caller``: it answers a call of ``echo_action`` to ``hello``), so the reply is known. One request
(each is ~72 sampled tokens on CPU): the SDK's sync client against the same pair is in
tests/capture/test_policy_backend.py; its text streams, against a scripted backend, in
tests/capture/test_sdks.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("torch", reason="openenv policy serve needs the train extra (torch)")
pytest.importorskip("transformers", reason="a Hugging Face checkpoint needs transformers")
anthropic = pytest.importorskip("anthropic", reason="the eval extra brings the anthropic SDK")

from openenv.capture import CaptureServer  # noqa: E402
from openenv.policy import LocalModel, serve_app  # noqa: E402
from openenv.server import serve_in_background  # noqa: E402

from ..policy._models import tool_caller  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]  # loads torch and a checkpoint

TOOLS = [
    {
        "name": "echo_action",
        "description": "echo a message",
        "input_schema": {"type": "object", "properties": {"message": {"type": "string"}}},
    }
]
ASK: dict[str, Any] = {
    "model": "caller",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hello"}],
    "extra_body": {"temperature": 0},  # greedy: the checkpoint's one answer
}


@pytest.fixture(scope="module")
def proxy() -> Iterator[CaptureServer]:
    model = LocalModel(str(tool_caller()), seed=0)
    with (
        serve_in_background(serve_app(model, model_name="caller")) as served,
        CaptureServer(llm_url=served.url + "/v1", port=0) as capture,
    ):
        yield capture


def _key(proxy: CaptureServer) -> str:
    made = httpx.post(proxy.url + "/sessions", json={}, timeout=30)
    made.raise_for_status()
    return str(made.json()["session_id"])


def test_async_streaming_tool_use(proxy: CaptureServer) -> None:
    key = _key(proxy)

    async def ask() -> tuple[list[str], Any]:
        client = anthropic.AsyncAnthropic(base_url=proxy.url, api_key=key, max_retries=0)
        async with client, client.messages.stream(**ASK, tools=TOOLS) as stream:
            kinds = [event.type async for event in stream]
            return kinds, await stream.get_final_message()

    kinds, reply = asyncio.run(ask())
    assert kinds[0] == "message_start"  # a real event stream, not one reply
    assert "content_block_start" in kinds
    assert kinds[-1] == "message_stop"
    assert reply.stop_reason == "tool_use"
    [use] = [b for b in reply.content if b.type == "tool_use"]
    assert (use.name, use.input) == ("echo_action", {"message": "hi"})
