"""The official ``anthropic`` SDK, async and streaming, text and tool use, against
``openenv policy serve`` over a real local checkpoint. Policy serve speaks the OpenAI
API; the Messages API in front of it is the capture proxy's (``openenv.capture``), as an
agent harness sees it. The checkpoint is the one tests/policy and tests/eval share
(``tool_caller``: it answers ``REPLY`` to ``hello``), so every reply is known. The SDK's
sync client against the same pair: tests/capture/test_policy_backend.py."""

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

from ..policy._models import REPLY, tool_caller  # noqa: E402

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


def test_async_streaming_text_and_tool_use(proxy: CaptureServer) -> None:
    key = _key(proxy)

    async def ask() -> tuple[str, Any, Any]:
        async with anthropic.AsyncAnthropic(base_url=proxy.url, api_key=key, max_retries=0) as client:
            async with client.messages.stream(**ASK) as stream:
                text = "".join([piece async for piece in stream.text_stream])
                said = await stream.get_final_message()
            async with client.messages.stream(**ASK, tools=TOOLS) as stream:
                used = await stream.get_final_message()
        return text, said, used

    text, said, used = asyncio.run(ask())
    assert text == REPLY  # streamed piece by piece, as the model sampled it
    assert said.stop_reason == "end_turn"
    assert [b.text for b in said.content if b.type == "text"] == [REPLY]
    assert used.stop_reason == "tool_use"
    [use] = [b for b in used.content if b.type == "tool_use"]
    assert (use.name, use.input) == ("echo_action", {"message": "hi"})
