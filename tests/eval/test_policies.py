"""Model policies in a run: the openai policy (official SDK) against `openenv policy
serve` over a local checkpoint, by text and by tool calls; the local policy; a 401."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")
pytest.importorskip("transformers", reason="a Hugging Face checkpoint needs transformers")
pytest.importorskip("openai", reason="the eval extra brings the openai SDK")

from openenv.eval import EvalConfig, load_trajectories, run_eval
from openenv.policy import LocalModel, serve_app
from openenv.server import serve_in_background

from ..conftest import free_port
from ..policy._models import REPLY, tool_caller

ROOT = Path(__file__).resolve().parents[2]
ECHO = str(ROOT / "envs" / "echo_env")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


@pytest.fixture(scope="module")
def checkpoint() -> Path:
    return tool_caller()  # trained once a run, shared with tests/policy


@pytest.fixture(scope="module")
def server(checkpoint: Path):
    app = serve_app(LocalModel(str(checkpoint)), model_name="caller", api_key="k1")
    with serve_in_background(app) as running:
        yield running


def _spec(server, **options: str) -> str:
    query = "&".join(
        f"{k}={v}"
        for k, v in {
            "base_url": server.url + "/v1",
            "api_key_env": "H8_TEST_KEY",
            "temperature": "0",
            "max_tokens": "100",
            **options,
        }.items()
    )
    return f"openai:caller?{query}"


def test_openai_policy_by_tool_calls(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H8_TEST_KEY", "k1")
    results = run_eval(
        EvalConfig(
            env=ECHO,
            policy=_spec(server, tools="1", token_ids="1", logprobs="1"),
            out=tmp_path,
            count=2,
            samples=2,
            max_turns=1,
            concurrency=4,
        )
    )
    assert results["errors"] == 0
    assert results["episodes"] == 4
    for t in load_trajectories(tmp_path):
        [turn] = t.turns
        assert turn.tool_calls == [{"name": "echo_action", "arguments": {"message": "hi"}}]
        assert turn.action == {"message": "hi"}
        assert turn.reward == pytest.approx(0.2)
        assert turn.token_ids
        assert len(turn.token_ids) == len(REPLY) + 1 == len(turn.logprobs or [])
        assert [m["role"] for m in turn.messages] == ["user", "assistant"]
        assert t.prompt_tokens > 0
        assert t.completion_tokens == len(REPLY) + 1
    assert results["completion_tokens"] == 4 * (len(REPLY) + 1)


@pytest.fixture(scope="module")
def transformers_serve(checkpoint: Path):
    """Hugging Face's own ``transformers serve`` (PyPI's transformers and its ``serving``
    extra), the server its CLI runs, in this process (no second torch start), on CPU over
    the local checkpoint; ``/health`` answered before the test starts."""
    pytest.importorskip("fastapi", reason="transformers serve needs transformers[serving] (fastapi)")
    from transformers.cli.serve import Serve

    from openenv.containers import wait_healthy

    port = free_port()
    server = Serve(str(checkpoint), host="127.0.0.1", port=port, device="cpu", non_blocking=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, timeout_s=120, alive=server._thread.is_alive, what="transformers serve")
        yield f"{url}/v1"
    finally:
        server.kill_server()
        server._thread.join(timeout=30)


def test_openai_policy_against_transformers_serve(
    transformers_serve: str, checkpoint: Path, tmp_path: Path
) -> None:
    """A third-party OpenAI-compatible server. It parses no tool calls for this chat
    template, so the policy reads the reply's ``<tool_call>`` text; it sends no token ids."""
    spec = f"openai:{checkpoint}?base_url={transformers_serve}&temperature=0&max_tokens=100&tools=1"
    results = run_eval(EvalConfig(env=ECHO, policy=spec, out=tmp_path, count=2, max_turns=1, concurrency=2))
    assert (results["episodes"], results["errors"]) == (2, 0)
    assert results["mean_reward"] == pytest.approx(0.2)  # "hi": the echo env pays 0.1 a character
    assert json.loads((tmp_path / "results.json").read_text())["mean_reward"] == results["mean_reward"]
    trajectories = load_trajectories(tmp_path)
    assert sorted(t.key for t in trajectories) == [("seed-0", 0), ("seed-1", 0)]
    for t in trajectories:
        [turn] = t.turns
        assert turn.messages[-1]["content"] == REPLY  # what the model said, as the server sent it
        assert turn.tool_calls == [{"name": "echo_action", "arguments": {"message": "hi"}}]
        assert turn.action == {"message": "hi"}
        assert turn.reward == pytest.approx(0.2)
        assert t.prompt_tokens > 0
        assert t.completion_tokens == len(REPLY) + 1  # the server's usage
        assert turn.token_ids is None  # transformers serve does not send them


def test_a_model_the_server_does_not_serve_is_its_own_words(transformers_serve: str, tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(
            env=ECHO, policy=f"openai:nope?base_url={transformers_serve}", out=tmp_path, count=1, max_turns=1
        )
    )
    assert results["errors"] == 1
    [t] = load_trajectories(tmp_path)
    assert t.error is not None
    assert t.error.startswith("PolicyError: the model server at ")  # was: "BadRequestError: Error code: 400"
    assert "answered 400" in t.error
    assert "'nope'" in t.error  # the server's words: it is pinned to another model


def test_openai_policy_by_text(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H8_TEST_KEY", "k1")
    run_eval(EvalConfig(env=ECHO, policy=_spec(server), out=tmp_path, count=1, max_turns=1))
    [t] = load_trajectories(tmp_path)
    assert t.turns[0].action == {"message": REPLY}  # a text env takes the reply as it is (RFC 0002)
    assert t.reward == pytest.approx(0.1 * len(REPLY))


def test_a_refused_key_is_one_line_and_exit_2(server, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "eval", ECHO, "-p", _spec(server), "-o", str(tmp_path / "o")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "H8_TEST_KEY": "wrong"},
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("openenv eval: ")
    assert "refused the key (401)" in line


def test_local_policy_samples_in_process_with_token_ids(tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(
            env=str(ROOT / "envs" / "arith_env"),
            policy="local:tiny?max_tokens=4",
            out=tmp_path,
            count=3,
            samples=2,
            max_turns=1,
            concurrency=6,
        )
    )
    assert results["errors"] == 0
    assert results["episodes"] == 6
    for t in load_trajectories(tmp_path):
        turn = t.turns[0]
        assert turn.token_ids
        assert len(turn.token_ids) == len(turn.logprobs or []) <= 4
        assert set(turn.action or {}) == {"answer"}
        assert set(t.reward_breakdown) == {"format", "digits", "exact"}  # the env's own, kept
