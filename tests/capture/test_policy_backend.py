"""The capture proxy in front of ``openenv policy serve`` (a local checkpoint returning
token ids and logprobs as vLLM does): level ``tokens``, the recorded ids decode (by the
checkpoint's own tokenizer) to exactly what the OpenAI and Anthropic SDKs received, and
the export is a TrainingTrace upstream's model reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("torch", reason="openenv policy serve needs the train extra (torch)")
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from openenv.capture import CaptureServer  # noqa: E402
from openenv.policy import LocalModel, serve_app  # noqa: E402
from openenv.server import serve_in_background  # noqa: E402

from .conftest import new_session  # noqa: E402
from .test_export import UPSTREAM_PY, upstream  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # loads torch and a checkpoint


@pytest.fixture(scope="module")
def model() -> LocalModel:
    return LocalModel("tiny", seed=0)


@pytest.fixture(scope="module")
def policy_proxy(model: LocalModel) -> Iterator[CaptureServer]:
    with (
        serve_in_background(serve_app(model, model_name="tiny")) as backend,
        CaptureServer(llm_url=backend.url + "/v1", port=0) as proxy,
    ):
        yield proxy


def sampled_text(model: LocalModel, ids: list[int]) -> str:
    stop = set(model.renderer.stop_ids)
    return str(model.decode(ids[:-1] if ids and ids[-1] in stop else ids))


def test_openai_and_anthropic_through_the_proxy_to_policy_serve(
    policy_proxy: CaptureServer, model: LocalModel
) -> None:
    made = httpx.post(policy_proxy.url + "/sessions", json={}).json()
    assert made["capture_level"] == "tokens"
    session = policy_proxy.registry.get(made["session_id"])
    assert session is not None
    chat = openai.OpenAI(base_url=policy_proxy.url + "/v1", api_key=session.session_id, max_retries=0)
    received: list[str] = []
    reply = chat.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=12
    )
    received.append(reply.choices[0].message.content or "")
    stream = chat.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "yo"}], max_tokens=12, stream=True
    )
    received.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    ant = anthropic.Anthropic(base_url=policy_proxy.url, api_key=session.session_id, max_retries=0)
    message: Any = ant.messages.create(
        model="tiny", max_tokens=12, messages=[{"role": "user", "content": "hey"}]
    )
    received.append("".join(b.text for b in message.content if b.type == "text"))
    nodes = session.graph.nodes()
    assert len(nodes) == 3
    for node, text in zip(nodes, received, strict=True):
        assert node.prompt_ids
        assert node.sampled_logprobs is not None
        assert len(node.sampled_logprobs) == len(node.sampled_ids) > 0
        assert sampled_text(model, node.sampled_ids) == text
    trace = httpx.get(f"{policy_proxy.url}/sessions/{session.session_id}/training_trace")
    assert trace.status_code == 200
    if UPSTREAM_PY.exists():
        done = upstream(trace.text)
        assert done.returncode == 0, done.stderr
    assert new_session(policy_proxy).capture_level == "tokens"


@pytest.mark.parametrize("stream", [False, True])
def test_two_turns_against_policy_serve_tiny_link_as_one_path(
    policy_proxy: CaptureServer, model: LocalModel, stream: bool
) -> None:
    """``tiny`` has no chat template: the server renders a chat by extension only, so the
    second turn's prompt begins with the first turn's prompt + its sampled ids."""
    session = new_session(policy_proxy)
    chat = openai.OpenAI(base_url=policy_proxy.url + "/v1", api_key=session.session_id, max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    for turn in range(2):
        if stream:
            chunks = chat.chat.completions.create(model="tiny", messages=messages, max_tokens=10, stream=True)  # type: ignore[arg-type]
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        else:
            reply = chat.chat.completions.create(model="tiny", messages=messages, max_tokens=10)  # type: ignore[arg-type]
            text = reply.choices[0].message.content or ""
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": f"again {turn}"}]
    first, second = session.graph.nodes()
    assert second.prompt_ids[: len(first.end_ids)] == first.end_ids
    assert second.parent_id == first.node_id
    stats = session.graph.stats()
    assert (stats["n_roots"], stats["n_turns"]) == (1, 2), stats
    assert [s.n_turns for s in session.graph.sequences()] == [2]
