"""Pass-through streaming: the proxy streams from the backend and translates each chunk
as it arrives (the agent's first event comes while the backend is still decoding), records
the call when the backend's stream ends, and answers a stream cut halfway with an error
event in the agent's dialect, keeping what it had as an incomplete call."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from openenv.capture import CaptureServer

from ._scripted import ScriptedBackend, decode
from .conftest import new_session
from .test_sdks import PROMPT, ant, oa

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

pytestmark = pytest.mark.timeout(60)
MESSAGES = [{"role": "user", "content": PROMPT}]

#: (path, body, key header) of a streamed call per dialect.
STREAMS: dict[str, tuple[str, dict[str, Any], str]] = {
    "openai_chat": (
        "/v1/chat/completions",
        {"model": "m", "messages": MESSAGES, "stream": True},
        "authorization",
    ),
    "openai_responses": ("/v1/responses", {"model": "m", "input": PROMPT, "stream": True}, "authorization"),
    "anthropic": (
        "/v1/messages",
        {"model": "m", "max_tokens": 64, "messages": MESSAGES, "stream": True},
        "x-api-key",
    ),
    "google": (
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]},
        "x-goog-api-key",
    ),
}


def headers(key_header: str, key: str) -> dict[str, str]:
    return {key_header: f"Bearer {key}" if key_header == "authorization" else key}


def events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


@pytest.mark.parametrize("dialect", list(STREAMS))
def test_the_first_event_comes_while_the_backend_still_decodes(
    proxy: CaptureServer, backend: ScriptedBackend, dialect: str
) -> None:
    session = new_session(proxy)
    path, body, key_header = STREAMS[dialect]
    backend.mode, backend.held_out = "hold", False
    backend.release.clear()
    try:
        with httpx.stream(
            "POST", proxy.url + path, json=body, headers=headers(key_header, session.session_id), timeout=30
        ) as reply:
            assert reply.status_code == 200
            lines = reply.iter_lines()
            first = next(line for line in lines if line.startswith("data: "))
            # the backend goes on to its hold (mid-stream) a moment after its first chunk
            for _ in range(1000):  # bounded: 10 s (the backend's own hold ends then)
                if backend.holding:
                    break
                time.sleep(0.01)
            assert backend.holding, "the first event waited for the backend's last token"
            assert session.graph.nodes() == []  # recorded only once the backend's stream ends
            backend.release.set()
            rest = "\n".join(lines)
    finally:
        backend.release.set()
    assert not backend.held_out
    assert first
    assert rest
    (node,) = session.graph.nodes()
    assert decode(node.sampled_ids) == f"reply to: {PROMPT}"
    assert node.sampled_logprobs is not None
    assert len(node.sampled_logprobs) == len(node.sampled_ids)


def test_a_streamed_call_records_what_a_plain_one_does(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    plain = oa(proxy, session).chat.completions.create(model="m", messages=MESSAGES)
    chunks = list(oa(proxy, session).chat.completions.create(model="m", messages=MESSAGES, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == plain.choices[0].message.content
    a, b = session.graph.nodes()
    assert (a.prompt_ids, a.sampled_ids, a.sampled_logprobs) == (
        b.prompt_ids,
        b.sampled_ids,
        b.sampled_logprobs,
    )
    assert a.response_message == {**b.response_message}
    # the agent asked for no token ids: none reach it, though the proxy recorded them
    assert all("token_ids" not in (c.choices[0].model_extra or {}) for c in chunks if c.choices)
    assert all("prompt_token_ids" not in (c.model_extra or {}) for c in chunks)


def test_an_agent_asking_for_token_ids_gets_them_per_chunk(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    chunks = list(
        oa(proxy, session).chat.completions.create(
            model="m", messages=MESSAGES, stream=True, logprobs=True, extra_body={"return_token_ids": True}
        )
    )
    ids = [i for c in chunks if c.choices for i in (c.choices[0].model_extra or {}).get("token_ids") or []]
    (node,) = session.graph.nodes()
    assert ids == node.sampled_ids
    assert chunks[0].model_extra["prompt_token_ids"] == node.prompt_ids
    lps = [
        e.logprob
        for c in chunks
        if c.choices and c.choices[0].logprobs
        for e in c.choices[0].logprobs.content
    ]
    assert lps == node.sampled_logprobs


@pytest.mark.parametrize("dialect", list(STREAMS))
def test_a_stream_cut_halfway_ends_in_an_error_event_and_is_kept_incomplete(
    proxy: CaptureServer, backend: ScriptedBackend, dialect: str
) -> None:
    session, other = new_session(proxy), new_session(proxy)
    oa(proxy, session).chat.completions.create(model="m", messages=MESSAGES)
    before = [n.node_id for n in session.graph.nodes()]
    path, body, key_header = STREAMS[dialect]
    backend.mode = "cut"
    reply = httpx.post(
        proxy.url + path, json=body, headers=headers(key_header, session.session_id), timeout=30
    )
    backend.mode = "ok"
    assert reply.status_code == 200  # the stream had begun
    got = events(reply.text)
    assert len(got) >= 2  # translated chunks came before the cut
    last = got[-1]
    if dialect == "anthropic":
        assert last["type"] == "error"
        assert last["error"]["type"] == "api_error"
        assert "event: error" in reply.text
    elif dialect == "google":
        assert last["error"]["code"] == 502
        assert last["error"]["status"] == "INTERNAL"
    elif dialect == "openai_responses":
        assert last["type"] == "error"
        assert last["error"]["type"] == "server_error"
    else:
        assert last["error"]["type"] == "api_error"
        assert "[DONE]" not in reply.text
    message = (last.get("error") or {}).get("message", "")
    assert "mid-stream" in message or "without [DONE]" in message
    assert [n.node_id for n in session.graph.nodes()] == before  # nothing half-recorded in the graph
    assert session.upstream_errors == 1
    (kept,) = session.incomplete
    assert kept["api_type"] == dialect
    assert kept["prompt_token_ids"]
    assert 0 < len(kept["choices"][0]["token_ids"]) < len(f"reply to: {PROMPT}".encode())
    rollout = httpx.get(f"{proxy.url}/sessions/{session.session_id}/rollout").json()
    assert len(rollout["incomplete_calls"]) == 1
    assert httpx.get(f"{proxy.url}/sessions/{session.session_id}").json()["incomplete_calls"] == 1
    oa(proxy, session).chat.completions.create(model="m", messages=MESSAGES)  # the session goes on
    oa(proxy, other).chat.completions.create(model="m", messages=MESSAGES)
    assert len(session.graph.nodes()) == 2
    assert len(other.graph.nodes()) == 1


def test_the_sdks_raise_on_a_cut_stream(proxy: CaptureServer, backend: ScriptedBackend) -> None:
    session = new_session(proxy)
    backend.mode = "cut"
    try:
        with pytest.raises(openai.APIError, match=r"mid-stream|without"):
            for _ in oa(proxy, session).chat.completions.create(model="m", messages=MESSAGES, stream=True):
                pass
        with pytest.raises(anthropic.APIStatusError, match=r"mid-stream|without"):
            for _ in ant(proxy, session).messages.create(
                model="m", max_tokens=64, messages=MESSAGES, stream=True
            ):
                pass
    finally:
        backend.mode = "ok"
    assert len(session.incomplete) == 2
    assert session.graph.nodes() == []
