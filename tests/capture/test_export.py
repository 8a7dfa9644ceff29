"""Exports: our TrainingTrace validates against upstream OpenEnv 0.10's own model (run in
its venv); the rollout document; the capture level probed, said, and kept honest."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from openenv.capture import CaptureServer, NotTrainable, export_session, to_training_trace

from ._scripted import ScriptedBackend, decode
from .conftest import new_session
from .test_sdks import CHAT_TOOLS, TOOL_PROMPT, oa

pytestmark = pytest.mark.timeout(120)
UPSTREAM_PY = Path(__file__).resolve().parents[2] / ".venv-upstream" / "bin" / "python"
CHECK = """
import json, sys
from openenv.core.harness.training import TrainingTrace
trace = TrainingTrace.model_validate_json(sys.stdin.read())
print(json.dumps({"schema_version": trace.schema_version, "turns": len(trace.turns),
                  "entries": len(trace.to_trace_entries())}))
"""


def upstream(data: str) -> subprocess.CompletedProcess[str]:
    """Upstream's model reads ``data`` in upstream's venv (from / so our package is not on the path)."""
    return subprocess.run(
        [str(UPSTREAM_PY), "-I", "-c", CHECK], input=data, capture_output=True, text=True, timeout=60, cwd="/"
    )


def two_turn_session(proxy: CaptureServer):  # type: ignore[no-untyped-def]
    session = new_session(proxy, task="demo")
    client = oa(proxy, session)
    messages = [{"role": "user", "content": TOOL_PROMPT}]
    first = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS).choices[0].message
    messages += [
        first.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "42"},
    ]
    client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
    return session


@pytest.mark.skipif(
    not UPSTREAM_PY.exists(), reason="upstream OpenEnv 0.10's venv (.venv-upstream) is absent"
)
def test_upstreams_training_trace_model_reads_our_export(proxy: CaptureServer) -> None:
    session = two_turn_session(proxy)
    body = httpx.get(f"{proxy.url}/sessions/{session.session_id}/training_trace")
    assert body.status_code == 200
    trace = to_training_trace(session.graph, export_session(session))
    assert json.loads(body.text) == json.loads(trace.model_dump_json())
    done = upstream(body.text)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"schema_version": 1, "turns": 2, "entries": 2}
    t1, t2 = trace.turns
    assert t2.prompt_token_ids[: len(t1.prompt_token_ids) + len(t1.completion_token_ids)] == (
        t1.prompt_token_ids + t1.completion_token_ids
    )
    for turn in trace.turns:
        assert turn.loss_mask == [0] * len(turn.prompt_token_ids) + [1] * len(turn.completion_token_ids)
        assert len(turn.per_token_logps) == len(turn.completion_token_ids)
    assert decode(t2.completion_token_ids) == "reply to: 42"


@pytest.mark.skipif(
    not UPSTREAM_PY.exists(), reason="upstream OpenEnv 0.10's venv (.venv-upstream) is absent"
)
def test_upstreams_model_refuses_a_broken_trace_we_would_refuse_too(proxy: CaptureServer) -> None:
    session = two_turn_session(proxy)
    data = json.loads(to_training_trace(session.graph, export_session(session)).model_dump_json())
    data["turns"][0]["loss_mask"][0] = 1  # a trainable prompt token
    done = upstream(json.dumps(data))
    assert done.returncode != 0
    assert "prompt" in done.stderr
    from openenv.capture import TrainingTrace

    with pytest.raises(ValueError, match="prompt"):
        TrainingTrace.model_validate(data)


def test_the_rollout_document(proxy: CaptureServer) -> None:
    session = two_turn_session(proxy)
    doc = httpx.get(f"{proxy.url}/sessions/{session.session_id}/rollout").json()
    assert doc["session_id"] == session.session_id
    assert doc["metadata"] == {"task": "demo"}
    assert doc["capture_level"] == "tokens"
    assert doc["rollout_type"] == "train"
    assert doc["trainable"]
    (row,) = doc["sequences"]
    t1, t2 = session.graph.nodes()
    assert row["role"] == "agent"
    assert row["node_ids"] == [t1.node_id, t2.node_id]
    assert row["input_ids"] == t2.prompt_ids + t2.sampled_ids
    assert row["turn_lengths"] == [len(t1.sampled_ids), len(t2.sampled_ids)]
    assert sum(row["loss_mask"]) == row["n_trainable"] == len(t1.sampled_ids) + len(t2.sampled_ids)
    assert [t["parent_id"] for t in doc["turns"]] == [None, t1.node_id]
    entries = httpx.get(f"{proxy.url}/sessions/{session.session_id}/trace_entries").json()["entries"]
    assert [e["metadata"]["node_id"] for e in entries] == [t1.node_id, t2.node_id]


@pytest.fixture
def text_backend() -> Iterator[ScriptedBackend]:
    from openenv.server import serve_in_background

    scripted = ScriptedBackend()
    scripted.mode = "text"
    with serve_in_background(scripted.app) as running:
        scripted.url = running.url + "/v1"
        yield scripted


@pytest.mark.parametrize(("mode", "level"), [("text", "text"), ("no-capture-params", "text")])
def test_a_text_only_backend_is_probed_said_and_never_trainable(
    text_backend: ScriptedBackend, mode: str, level: str
) -> None:
    text_backend.mode = mode
    with CaptureServer(llm_url=text_backend.url, port=0) as server:
        made = httpx.post(server.url + "/sessions", json={}).json()
        assert made["capture_level"] == level
        assert made["trainable"] is False
        assert made["rollout_type"] == "eval"
        assert httpx.get(server.url + "/health").json()["capture_level"] == level
        session = server.registry.get(made["session_id"])
        assert session is not None
        client = oa(server, session)
        messages = [{"role": "user", "content": "one"}]
        first = client.chat.completions.create(model="m", messages=messages).choices[0].message.content
        messages += [{"role": "assistant", "content": first}, {"role": "user", "content": "two"}]
        client.chat.completions.create(model="m", messages=messages)
        t1, t2 = session.graph.nodes()
        assert t2.parent_id == t1.node_id  # linked by messages where there are no ids
        doc = httpx.get(f"{server.url}/sessions/{session.session_id}/rollout").json()
        assert doc["rollout_type"] == "eval"
        assert doc["trainable"] is False
        refused = httpx.get(f"{server.url}/sessions/{session.session_id}/training_trace")
        assert refused.status_code == 409
        assert "no token ids" in refused.json()["error"]["message"]
        with pytest.raises(NotTrainable):
            to_training_trace(session.graph, export_session(session))


def test_a_call_below_the_probed_level_lowers_the_session(
    proxy: CaptureServer, backend: ScriptedBackend
) -> None:
    session = new_session(proxy)
    backend.mode = "text"
    oa(proxy, session).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert session.capture_level == "text"
    assert any("level text" in f for f in session.findings)
    with pytest.raises(NotTrainable):
        to_training_trace(session.graph, export_session(session))
