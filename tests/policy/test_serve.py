"""``openenv policy serve``: the official openai SDK (sync, async, streaming, tool calls)
against a real local checkpoint served over HTTP on loopback."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="openenv policy serve needs the train extra (torch)")
pytest.importorskip("transformers", reason="a Hugging Face checkpoint needs transformers")
openai = pytest.importorskip("openai", reason="the eval extra brings the openai SDK")

from openenv.policy import LocalModel, serve_app  # noqa: E402
from openenv.server import serve_in_background  # noqa: E402

from ._models import REPLY, tool_caller  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(400),
]  # the fixture trains a model (seconds; more when loaded)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "echo_action",
            "description": "echo a message",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
        },
    }
]
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def checkpoint() -> Path:
    return tool_caller()  # trained once a run, shared with tests/eval


@pytest.fixture(scope="module")
def model(checkpoint: Path) -> LocalModel:
    return LocalModel(str(checkpoint), seed=0)


@pytest.fixture(scope="module")
def server(model: LocalModel):
    with serve_in_background(serve_app(model, model_name="caller", api_key="sekrit")) as running:
        yield running


#: The request most tests send: the hello chat, answered greedily.
GREEDY = {"model": "caller", "messages": HELLO, "temperature": 0, "max_tokens": 100}


def client(server, key: str = "sekrit"):
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


def test_models_lists_the_checkpoint(server) -> None:
    assert [m.id for m in client(server).models.list().data] == ["caller"]


def test_sync_completion_with_token_ids_and_logprobs(server) -> None:
    reply = client(server).chat.completions.create(
        **GREEDY,
        logprobs=True,
        extra_body={"return_token_ids": True},
    )
    choice = reply.choices[0]
    assert choice.message.content == REPLY  # no tools offered: the text as it is
    assert choice.finish_reason == "stop"
    ids = choice.model_extra["token_ids"]
    assert len(ids) == len(REPLY) + 1  # one id a character, then the stop token
    lps = [t.logprob for t in choice.logprobs.content]
    assert len(lps) == len(ids)
    assert all(lp <= 0 and math.isfinite(lp) for lp in lps)
    assert reply.usage.completion_tokens == len(ids)
    assert reply.model_extra["prompt_token_ids"]
    assert reply.usage.prompt_tokens == len(reply.model_extra["prompt_token_ids"])


def test_tool_calls_come_back_as_tool_calls(server) -> None:
    reply = client(server).chat.completions.create(**GREEDY, tools=TOOLS)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.function.name == "echo_action"
    assert call.function.arguments == '{"message": "hi"}'


async def test_async_client(server) -> None:
    async with openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="sekrit", max_retries=0) as aclient:
        replies = [await aclient.chat.completions.create(**GREEDY) for _ in range(2)]
    assert [r.choices[0].message.content for r in replies] == [REPLY, REPLY]


def test_streaming_text_and_tool_calls(server) -> None:
    stream = client(server).chat.completions.create(
        **GREEDY,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == REPLY
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.completion_tokens == len(REPLY) + 1
    stream = client(server).chat.completions.create(**GREEDY, stream=True, tools=TOOLS)
    calls = [t for c in stream if c.choices for t in (c.choices[0].delta.tool_calls or [])]
    assert [(t.function.name, t.function.arguments) for t in calls] == [("echo_action", '{"message": "hi"}')]


def test_a_wrong_key_is_401(server) -> None:
    with pytest.raises(openai.AuthenticationError):
        client(server, key="wrong").chat.completions.create(model="caller", messages=HELLO)


def test_concurrent_requests_are_batched(server, model: LocalModel) -> None:
    import asyncio

    before = len(model.batch_sizes)

    async def many() -> list[str]:
        async with openai.AsyncOpenAI(
            base_url=server.url + "/v1", api_key="sekrit", max_retries=0
        ) as aclient:
            replies = await asyncio.gather(*(aclient.chat.completions.create(**GREEDY) for _ in range(6)))
        return [r.choices[0].message.content for r in replies]

    assert asyncio.run(many()) == [REPLY] * 6
    sizes = model.batch_sizes[before:]
    assert sum(sizes) == 6
    assert max(sizes) > 1


def test_a_prompt_past_the_context_is_a_400_and_a_long_one_is_cut_at_the_context(server) -> None:
    """vLLM's answers: no room for one token is a 400 naming the limit (was a 500 from
    the model's own check); near the limit, the completion stops there (``length``)."""
    over = [{"role": "user", "content": "x" * 600}]  # the checkpoint takes 512 positions
    with pytest.raises(openai.BadRequestError, match="maximum context length is 512 tokens"):
        client(server).chat.completions.create(model="caller", messages=over, max_tokens=4)
    near = [{"role": "user", "content": "x" * 500}]
    reply = client(server).chat.completions.create(
        model="caller", messages=near, max_tokens=100, extra_body={"return_token_ids": True}
    )
    prompt = len(reply.model_extra["prompt_token_ids"])
    assert 0 < len(reply.choices[0].model_extra["token_ids"]) == 512 - prompt
    assert reply.choices[0].finish_reason == "length"


def test_a_stream_sends_each_token_as_it_is_sampled(server, model: LocalModel) -> None:
    """The model may take its next forward step only after the client has read the chunk
    of the token before it (a gate in the model's forward hook, opened by the test as
    each chunk arrives through the openai SDK's stream): a server that sends after the
    whole completion deadlocks on the gate and fails, one that streams per token passes.
    Each chunk's logprob is the model's own (teacher-forced) logprob of its token."""
    import threading

    import torch

    gate = threading.Semaphore(1)  # the first forward (the prompt) may go
    forwards: list[int] = []

    def hold(module, args, kwargs):
        if not gate.acquire(timeout=60):
            raise RuntimeError("the client never got the previous token's chunk")
        forwards.append(1)

    hf = model.policy.model
    handle = hf.register_forward_pre_hook(hold, with_kwargs=True)
    try:
        stream = client(server).chat.completions.create(
            model="caller",
            messages=HELLO,
            temperature=0.7,
            max_tokens=100,
            stream=True,
            logprobs=True,
            extra_body={"return_token_ids": True},
        )
        ids: list[int] = []
        logprobs: list[float] = []
        text = ""
        for chunk in stream:
            if not chunk.choices:
                continue
            [token] = (chunk.choices[0].model_extra or {}).get("token_ids") or [None]
            if token is None:
                continue
            assert len(forwards) == len(ids) + 1  # sampled and sent before the next step ran
            ids.append(token)
            logprobs.append(chunk.choices[0].logprobs.content[0].logprob)
            text += chunk.choices[0].delta.content or ""
            gate.release()
    finally:
        handle.remove()
    assert ids
    assert ids[-1] == model.renderer.stop_ids[0] or len(ids) == 100
    prompt = model.render(HELLO)
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1].float() / 0.7
    expected = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids)[:, None]).squeeze(1)
    assert logprobs == pytest.approx(expected.tolist(), abs=1e-3)
    assert text == model.decode(ids[:-1] if ids[-1] in model.renderer.stop_ids else ids)
