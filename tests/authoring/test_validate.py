"""``openenv validate`` against good servers (ours, upstream 0.10's) and broken ones."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.authoring import Outcome, Report, validate_url

from ._broken import CountEnv, NoisyEnv, RawServer, SchemaLiarEnv, SharedStateEnv

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_PY = REPO / ".venv-upstream" / "bin" / "python"
SERVE_ECHO = REPO / "tests" / "interop" / "upstream_side" / "serve_echo.py"
ALL_CHECKS = ["health", "metadata", "schema", "episode", "http", "determinism", "bad_frames",
              "isolation", "close", "tasks", "mcp"]


def outcomes(report: Report) -> dict[str, str]:
    return {c.name: c.outcome.value for c in report.checks}


def test_our_echo_env_passes_every_check(serve):
    from echo_env import EchoEnv

    report = validate_url(serve(EchoEnv).url, deterministic=True)
    assert report.ok, report.render()
    got = outcomes(report)
    assert [name for name in ALL_CHECKS[:9] if got[name] == "pass"] == ALL_CHECKS[:9]
    assert got["tasks"] == "skip"  # no task set
    # /mcp: the MCP bridge lists the echo tool; a server without one answers a JSON-RPC error
    assert got["mcp"] in ("pass", "skip")
    if got["mcp"] == "pass":
        assert "(echo)" in report.get("mcp").summary
    assert "invalid JSON: error INVALID_JSON" in report.get("bad_frames").details
    assert "0 failed" in report.render()


def test_given_actions_are_used_and_checked_against_the_schema(serve):
    url = serve(CountEnv).url
    assert validate_url(url, actions=[{"n": 3}, {"n": 0}]).ok
    report = validate_url(url, actions=[{"n": 99}])  # over le=10: not a valid action
    assert outcomes(report)["schema"] == "fail"
    assert "does not fit the action schema" in report.get("schema").summary
    assert not report.ok


def test_observation_that_breaks_its_schema_fails_episode(serve):
    report = validate_url(serve(SchemaLiarEnv).url)
    assert outcomes(report)["episode"] == "fail"
    assert any("total: 0 is not of type 'string'" in d for d in report.get("episode").details)
    assert not report.ok


def test_sessions_sharing_state_fail_isolation(serve):
    report = validate_url(serve(SharedStateEnv).url)
    got = outcomes(report)
    assert got["isolation"] == "fail", report.render()
    assert "expected 2 and 0" in report.get("isolation").details[0]
    assert got["episode"] == "pass"


def test_nondeterminism_warns_unless_claimed(serve):
    url = serve(NoisyEnv).url
    assert outcomes(validate_url(url))["determinism"] == "warn"
    claimed = validate_url(url, deterministic=True)
    assert outcomes(claimed)["determinism"] == "fail"
    assert not claimed.ok


@pytest.mark.parametrize(
    ("fault", "failed"),
    [("drop_bad_frames", "bad_frames"), ("ignore_close", "close"), ("unhealthy", "health")],
)
def test_protocol_faults_are_each_reported(fault, failed):
    server = RawServer(fault).start()
    try:
        report = validate_url(server.url, timeout_s=2.0)
    finally:
        server.stop()
    got = outcomes(report)
    assert report.failed() == [failed], report.render()
    if fault == "unhealthy":
        assert list(got) == ["health"]  # nothing else is tried
    else:
        assert got["episode"] == got["isolation"] == "pass"


def test_unreachable_server_fails_cleanly():
    report = validate_url("http://127.0.0.1:9", timeout_s=1.0)
    assert report.failed() == ["health"]
    assert "failed" in report.get("health").summary


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    if not UPSTREAM_PY.is_file():
        pytest.skip(f"upstream OpenEnv 0.10 is not installed: {UPSTREAM_PY} is missing (see scripts/test.sh)")
    port_file = Path(tempfile.mkdtemp(prefix="validate-upstream-")) / "port"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.Popen(
        [str(UPSTREAM_PY), str(SERVE_ECHO), "--port", "0", "--max-sessions", "4",
         "--max-seconds", "300", "--port-file", str(port_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tempfile.gettempdir(), env=env,
    )
    try:
        deadline = time.monotonic() + 90
        while not (port_file.is_file() and port_file.read_text().strip()):
            if proc.poll() is not None:
                err = proc.stderr.read()[-2000:] if proc.stderr else b""
                pytest.fail(f"upstream serve_echo.py exited {proc.returncode}: {err!r}")
            assert time.monotonic() < deadline, "upstream server did not start in 90 s"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port_file.read_text().strip()}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.mark.upstream
@pytest.mark.timeout(180)
def test_upstream_echo_server_passes(upstream_url):
    report = validate_url(upstream_url)
    assert report.ok, report.render()
    got = outcomes(report)
    assert all(got[name] == "pass" for name in ALL_CHECKS[:9]), got
    # upstream never opens /sessions: close is judged by the socket alone
    assert "sessions" not in report.get("close").summary


@pytest.mark.upstream
@pytest.mark.timeout(180)
def test_cli_validate_json_against_upstream(upstream_url):
    out = subprocess.run(
        [sys.executable, "-m", "openenv", "validate", upstream_url, "--json", "--max-steps", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr + out.stdout
    body = json.loads(out.stdout)
    assert body["ok"] is True
    assert body["checks"][0] == {"name": "health", "outcome": "pass",
                                 "summary": "GET /health is healthy", "details": []}


def test_cli_exit_status_is_one_on_failure():
    server = RawServer("ignore_close").start()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "openenv", "validate", server.url, "--timeout", "2"],
            capture_output=True, text=True, timeout=120,
        )
    finally:
        server.stop()
    assert out.returncode == 1, out.stdout + out.stderr
    assert "FAIL  close" in out.stdout
    assert "FAILED (close)" in out.stdout.splitlines()[-1]


def test_outcome_values_are_stable():
    assert [o.value for o in Outcome] == ["pass", "fail", "warn", "skip"]


def test_task_api_is_checked_where_present(serve, tmp_path):
    pytest.importorskip("datasets", reason="the Task API needs the tasks extra (datasets)")
    from openenv.tasks import TaskOptions, TaskSet

    rows = [{"id": f"q{i}", "question": f"{i} + 1", "answer": i + 1} for i in range(3)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    class QuizEnv(CountEnv):
        task_set = TaskSet(str(tmp_path / "train.jsonl"))
        reset_options_model = TaskOptions

    report = validate_url(serve(QuizEnv).url)
    assert report.ok, report.render()
    tasks = report.get("tasks")
    assert tasks.outcome is Outcome.PASS
    assert tasks.summary == "Task API at /QuizEnv/: splits, num_tasks, task_range, bad split"


def test_a_ws_url_is_accepted(serve):
    server = serve(CountEnv)
    report = validate_url(server.ws_url, max_steps=1)
    assert report.target == server.url
    assert report.ok, report.render()


def test_a_serve_target_is_served_and_checked():
    from openenv.authoring import validate

    report = validate("tests.authoring._broken:SharedStateEnv", max_steps=1)
    assert report.checks[0].name == "serve"
    assert report.failed() == ["isolation"], report.render()
    missing = validate("no_such_env_anywhere")
    assert missing.failed() == ["serve"]
    assert "no environment 'no_such_env_anywhere'" in missing.get("serve").summary


def test_a_one_session_server_warns_on_isolation(serve):
    report = validate_url(serve(CountEnv, max_sessions=1).url, max_steps=2)
    assert report.ok, report.render()
    isolation = report.get("isolation")
    assert (isolation.outcome, isolation.summary) == (
        Outcome.WARN, "the server refuses a second concurrent session")


def test_a_refused_minimal_action_is_retried_with_every_field_set(serve):
    from ._broken import PickyEnv

    report = validate_url(serve(PickyEnv).url, max_steps=2)
    assert report.ok, report.render()
    episode = report.get("episode")
    assert episode.details == ['the schema\'s minimal action {} was refused; using {"n": 0}']


def test_an_env_refusing_its_own_schema_fails_once_not_five_times(serve):
    from ._broken import RefusingEnv

    report = validate_url(serve(RefusingEnv).url, max_steps=2)
    got = outcomes(report)
    assert report.failed() == ["episode"], report.render()
    summary = report.get("episode").summary
    assert summary.endswith("the env refuses what its action schema allows: pass --action")
    assert [got[name] for name in ("http", "determinism", "bad_frames", "isolation")] == ["skip"] * 4
