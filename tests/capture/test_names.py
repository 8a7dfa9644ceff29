"""openenv.capture's public names: a sorted ``__all__``, upstream 0.10's
``openenv.core.harness.capture`` names that we carry (the rest named here, not done),
and upstream's routes answered."""

from __future__ import annotations

import subprocess

import httpx
import pytest

import openenv.capture as capture
from openenv.capture import CaptureServer

from .test_export import UPSTREAM_PY

#: Upstream's names we do not provide yet: its LLM validation suite and the re-tokenisation skew probe.
NOT_YET = {"LLMReport", "validate_llm", "require_llm", "measure_retokenization_skew"}


def test_all_is_sorted_and_complete() -> None:
    assert capture.__all__ == sorted(capture.__all__)
    assert all(hasattr(capture, name) for name in capture.__all__)


@pytest.mark.skipif(
    not UPSTREAM_PY.exists(), reason="upstream OpenEnv 0.10's venv (.venv-upstream) is absent"
)
@pytest.mark.timeout(120)
def test_upstreams_capture_names_are_ours() -> None:
    code = "import openenv.core.harness.capture as c, openenv.core.harness as h; print(' '.join(c.__all__))"
    done = subprocess.run(
        [str(UPSTREAM_PY), "-I", "-c", code], capture_output=True, text=True, timeout=90, cwd="/"
    )
    assert done.returncode == 0, done.stderr
    theirs = set(done.stdout.split())
    assert theirs - NOT_YET <= set(capture.__all__)
    assert {"TrainingTrace", "TrainingTurn"} <= set(capture.__all__)  # upstream's openenv.core.harness


def test_upstreams_routes_answer(proxy: CaptureServer) -> None:
    made = httpx.post(proxy.url + "/sessions", json={"metadata": {"k": 1}}).json()
    sid = made["session_id"]
    assert {"session_id", "capture_level", "rollout_type"} <= made.keys()
    health = httpx.get(proxy.url + "/health").json()
    assert {
        "status",
        "instance",
        "upstream",
        "model",
        "sessions",
        "capture_level",
        "rollout_type",
    } <= health.keys()
    assert sid in [s["session_id"] for s in httpx.get(proxy.url + "/sessions").json()["sessions"]]
    assert httpx.get(f"{proxy.url}/sessions/{sid}").json()["n_turns"] == 0
    assert httpx.get(f"{proxy.url}/sessions/{sid}/rollout").json()["sequences"] == []
    assert httpx.get(proxy.url + "/v1/models").json()["data"][0]["id"] == "scripted-1"
    assert httpx.delete(f"{proxy.url}/sessions/{sid}").json() == {"deleted": True}
    gone = httpx.get(f"{proxy.url}/sessions/{sid}")
    assert gone.status_code == 404
    assert gone.json() == {"error": "unknown session"}
