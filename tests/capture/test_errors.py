"""Bad input gets a clear error in the agent's own dialect; the session keeps its trace
and other sessions go on: no known dialect, an unknown key, a malformed body, a backend
that is down, answers 500 or cuts its reply halfway, an agent that drops its stream."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from openenv.capture import CaptureServer, Session

from ._scripted import ScriptedBackend
from .conftest import new_session
from .test_sdks import PROMPT, ant, gclient, oa

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
from google.genai import errors as gerrors  # noqa: E402

pytestmark = pytest.mark.timeout(60)
CHAT = {"model": "m", "messages": [{"role": "user", "content": PROMPT}]}


def one_call_each(proxy: CaptureServer, session: Session) -> None:
    """A working call per dialect (each recorded)."""
    oa(proxy, session).chat.completions.create(**CHAT)
    oa(proxy, session).responses.create(model="m", input=PROMPT)
    ant(proxy, session).messages.create(model="m", max_tokens=64, messages=CHAT["messages"])
    google = gclient(proxy, session)  # held: a Client closes its transport when collected
    google.models.generate_content(model="g", contents=PROMPT)


def failing_calls(proxy: CaptureServer, key: str) -> list[tuple[int, str]]:
    """One call per SDK that must fail: (status, message) as each SDK reports it."""
    fake = Session(key)
    out = []
    calls: list[Callable[[], object]] = [
        lambda: oa(proxy, fake).chat.completions.create(**CHAT),
        lambda: oa(proxy, fake).responses.create(model="m", input=PROMPT),
        lambda: ant(proxy, fake).messages.create(model="m", max_tokens=64, messages=CHAT["messages"]),
    ]
    for call in calls:
        with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as err:
            call()
        out.append((err.value.status_code, err.value.message))
    google = gclient(proxy, fake)
    with pytest.raises(gerrors.APIError) as gerr:
        google.models.generate_content(model="g", contents=PROMPT)
    out.append((gerr.value.code, gerr.value.message or ""))
    return out


def test_an_unknown_key_is_401_in_every_dialect(proxy: CaptureServer) -> None:
    for status, message in failing_calls(proxy, "not-a-session"):
        assert status == 401
        assert "unknown API key" in message


def test_a_route_in_no_dialect_is_404_naming_the_routes(proxy: CaptureServer) -> None:
    session = new_session(proxy)
    reply = httpx.post(
        proxy.url + "/v1/completions",
        json={"prompt": "hi"},
        headers={"authorization": f"Bearer {session.session_id}"},
    )
    assert reply.status_code == 404
    assert "/v1/chat/completions" in reply.json()["error"]["message"]
    assert session.graph.nodes() == []


@pytest.mark.parametrize(
    ("path", "body", "key_header", "shape"),
    [
        ("/v1/chat/completions", {"model": "m"}, "authorization", "openai"),
        (
            "/v1/messages",
            {"model": "m", "messages": [{"role": "user", "content": "x"}]},
            "x-api-key",
            "anthropic",
        ),
        ("/v1beta/models/g:generateContent", {"contents": "x"}, "x-goog-api-key", "google"),
        ("/v1/responses", {"model": "m", "input": [{"type": "mystery"}]}, "authorization", "openai"),
    ],
)
def test_a_malformed_request_is_400_in_its_dialect(
    proxy: CaptureServer, path: str, body: dict[str, Any], key_header: str, shape: str
) -> None:
    session = new_session(proxy)
    key = f"Bearer {session.session_id}" if key_header == "authorization" else session.session_id
    reply = httpx.post(proxy.url + path, json=body, headers={key_header: key})
    assert reply.status_code == 400
    err = reply.json()
    if shape == "anthropic":
        assert err["type"] == "error"
        assert err["error"]["type"] == "invalid_request_error"
    elif shape == "google":
        assert err["error"]["status"] == "INVALID_ARGUMENT"
        assert err["error"]["code"] == 400
    else:
        assert err["error"]["type"] == "invalid_request_error"
    assert err["error"]["message"].startswith("bad request: ")
    not_json = httpx.post(proxy.url + path, content=b"{nope", headers={key_header: key})
    assert not_json.status_code == 400


@pytest.mark.parametrize("mode", ["500", "cut"])
def test_a_failing_backend_is_502_in_every_dialect_and_the_trace_is_kept(
    proxy: CaptureServer, backend: ScriptedBackend, mode: str
) -> None:
    session, other = new_session(proxy), new_session(proxy)
    one_call_each(proxy, session)
    before = [n.node_id for n in session.graph.nodes()]
    backend.mode = mode
    for status, message in failing_calls(proxy, session.session_id):
        assert status == 502
        assert ("500" in message) if mode == "500" else ("failed" in message)
    backend.mode = "ok"
    assert [n.node_id for n in session.graph.nodes()] == before  # nothing half-recorded
    assert session.upstream_errors == 4
    assert len(session.findings) == 4
    one_call_each(proxy, session)  # the session goes on
    one_call_each(proxy, other)  # and so do the others
    assert len(session.graph.nodes()) == 8
    assert len(other.graph.nodes()) == 4
    rollout = httpx.get(f"{proxy.url}/sessions/{session.session_id}/rollout").json()
    assert rollout["upstream_errors"] == 4
    assert rollout["stats"]["n_turns"] == 8


@pytest.fixture
def dead_proxy() -> Iterator[CaptureServer]:
    """A proxy whose backend is down (a port nothing listens on)."""
    with CaptureServer(llm_url="http://127.0.0.1:9/v1", port=0, capture_level="tokens") as server:
        yield server


def test_a_backend_that_is_down_is_502_in_every_dialect(dead_proxy: CaptureServer) -> None:
    session = new_session(dead_proxy)
    for status, message in failing_calls(dead_proxy, session.session_id):
        assert status == 502
        assert "ConnectError" in message
    assert session.upstream_errors == 4
    assert session.graph.nodes() == []


def test_an_unprobed_dead_backend_refuses_sessions_with_a_reason() -> None:
    with CaptureServer(llm_url="http://127.0.0.1:9/v1", port=0) as server:
        reply = httpx.post(server.url + "/sessions", json={})
        assert reply.status_code == 502
        assert "cannot probe the backend" in reply.json()["error"]["message"]


def test_an_agent_that_drops_its_stream_halfway_leaves_the_session_whole(proxy: CaptureServer) -> None:
    session, other = new_session(proxy), new_session(proxy)
    body = {**CHAT, "messages": [{"role": "user", "content": "x" * 400}], "stream": True}
    headers = {"authorization": f"Bearer {session.session_id}"}
    with httpx.stream("POST", proxy.url + "/v1/chat/completions", json=body, headers=headers) as reply:
        assert reply.status_code == 200
        first = next(reply.iter_lines())
        assert first.startswith("data: ")
    # dropped after one event: the proxy reads the backend's stream to its end and records it
    deadline = time.monotonic() + 10
    while not session.graph.nodes() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(session.graph.nodes()) == 1
    oa(proxy, session).chat.completions.create(**CHAT)
    oa(proxy, other).chat.completions.create(**CHAT)
    assert len(session.graph.nodes()) == 2
    assert len(other.graph.nodes()) == 1


def test_session_routes_need_the_admin_key_when_one_is_set(backend: ScriptedBackend) -> None:
    with CaptureServer(llm_url=backend.url, port=0, admin_key="adm") as server:
        assert httpx.post(server.url + "/sessions", json={}).status_code == 401
        assert httpx.get(server.url + "/sessions").status_code == 401
        made = httpx.post(server.url + "/sessions", json={}, headers={"authorization": "Bearer adm"})
        sid = made.json()["session_id"]
        assert httpx.get(f"{server.url}/sessions/{sid}/rollout").status_code == 401
        ok = httpx.get(f"{server.url}/sessions/{sid}/rollout", headers={"authorization": "Bearer adm"})
        assert ok.status_code == 200
        assert (
            httpx.get(
                f"{server.url}/sessions/nope/rollout", headers={"authorization": "Bearer adm"}
            ).status_code
            == 404
        )
