"""Stock schemathesis, every check and its stateful phase, against every shipped env.

The ``schemathesis run`` command line as a user would run it: all checks
(``--checks all``: no 5xx, documented statuses, bodies and headers, schema-valid
requests accepted and invalid ones refused, ``use_after_free``, ...) in the coverage,
fuzzing and stateful phases (the stateful phase follows the OpenAPI links from
``POST /sessions`` through reset, step, state and close). Bounded in examples per
operation and in time; a real server on 127.0.0.1: the echo env in-process (open and
with a token), every other env in ``envs/`` by the real CLI (``openenv serve <folder>``).

Three settings, in a config file, each for a documented answer the defaults do not know
(the body and the status are still checked against the document):

* ``not_a_server_error`` also expects ``504``: a request's ``timeout_s`` is at least
  1 ms (below it: ``422 VALIDATION_ERROR``), and a step of the terminal env can overrun
  even a 10 ms deadline; the answer to a call that overruns its caller's deadline is
  ``504 DEADLINE_EXCEEDED``, which stock ``not_a_server_error`` counts as a failure;
* ``positive_data_acceptance`` also expects ``400``: ``POST /{env_name}/task`` past the
  end of a split is ``400 "Invalid task index"`` as upstream answers it, and a session's
  reset whose options name no task is ``400 TASK_NOT_FOUND`` (a task set's splits, ids
  and sizes are data, not schema; ``404`` there would say the session is gone). The
  ``400`` is in the OpenAPI document, but stock ``positive_data_acceptance`` does not
  read the document's statuses;
* ``max_response_time`` is 20 s, not 10: a browser ``noop`` may wait up to 10 s, then the
  page is read (the run here caps it at 0.2 s with the env's ``max_wait_ms``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

pytest.importorskip("schemathesis", reason="schemathesis comes with the 'dev' extra")
echo_env = pytest.importorskip("echo_env", reason="envs/echo_env is installed by scripts/test.sh")

from ..conftest import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("schemathesis")
EXAMPLES = 25
#: Fewer for the browser env: each reset loads a page in a real Chromium.
ENV_EXAMPLES = {"browser_env": 10}
#: The terminal env waits up to a step's ``timeout_s`` (at most ``max_timeout_s``, 120 s
#: by default) for a command or keys to finish: the fuzzer asks for the most, and three
#: such steps outran the run's bound once in CI. 5 s keeps each step inside
#: ``max_response_time``.
#: The browser env's ``noop`` may ask for up to 10 s of waiting: the coverage phase asks
#: for 10000 and 9999 ms (21 s of a 115 s run); ``max_wait_ms`` caps the wait, the
#: request and its answer are checked as before. (One worker: with ``--workers 4``
#: schemathesis' generation threads crash CPython 3.11's AST constructor, "recursion
#: depth mismatch", a runtime error in about one run in two.)
ENV_KWARGS = {
    "terminal_env": '{"max_timeout_s": 5, "default_timeout_s": 5}',
    "browser_env": '{"max_wait_ms": 200}',
}
CONFIG = """\
[checks]
max_response_time = 20.0

[checks.not_a_server_error]
expected-statuses = ["2xx", "3xx", "4xx", "504"]

[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]
"""
SHIPPED = {"echo_env", "arith_env", "coding_env", "terminal_env", "browser_env"}


def servable_envs() -> list[Path]:
    """``envs/*/`` folders that ``openenv serve <folder>`` serves (an entry point)."""
    found = []
    for pyproject in sorted(ROOT.glob("envs/*/pyproject.toml")):
        with pyproject.open("rb") as f:
            if tomllib.load(f).get("project", {}).get("entry-points", {}).get("openenv.envs"):
                found.append(pyproject.parent)
    return found


ENVS = servable_envs()


def schemathesis_run(url: str, cwd: Path, examples: int, *extra: str) -> subprocess.CompletedProcess[str]:
    (cwd / "schemathesis.toml").write_text(CONFIG)
    command = [
        str(CLI), "--config-file", str(cwd / "schemathesis.toml"), "run", f"{url}/openapi.json",
        "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", str(examples), "--request-timeout", "30", "--workers", "1", "--no-color",
        "--generation-database", "none", *extra,
    ]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=270)


def assert_passed(done: subprocess.CompletedProcess[str], server_log: str = "") -> None:
    report = done.stdout[-15000:] + done.stderr[-3000:] + server_log[-5000:]
    assert done.returncode == 0, report
    assert "✅ Stateful" in done.stdout, report  # the stateful phase ran, and passed
    assert "✅ Fuzzing" in done.stdout, report
    assert "✅ Coverage" in done.stdout, report


@contextmanager
def cli_server(folder: Path, log: Path) -> Iterator[str]:
    """``python -m openenv serve <folder>`` on a free port of 127.0.0.1, its output in
    ``log``; stopped afterwards."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", str(folder), "--host", "127.0.0.1", "--port", str(port),
         "--max-sessions", "4096", "--idle-timeout", "0",
         *(["--env-kwargs", ENV_KWARGS[folder.name]] if folder.name in ENV_KWARGS else [])],
        cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _healthy(url):
            assert proc.poll() is None, f"openenv serve {folder.name} exited with {proc.returncode}"
            assert time.monotonic() < deadline, f"openenv serve {folder.name} was not healthy within 60 s"
            time.sleep(0.1)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_every_shipped_env_is_run() -> None:
    assert {folder.name for folder in ENVS} >= SHIPPED


@pytest.mark.timeout(300)
@pytest.mark.parametrize("token", [None, "fuzz-token"], ids=["open", "with-token"])
def test_stock_schemathesis_all_checks_and_stateful_pass_on_the_echo_env(serve, tmp_path, token):
    server = serve(echo_env.EchoEnv, max_sessions=4096, auth_token=token or "")
    extra = ["--header", f"Authorization: Bearer {token}"] if token else []
    assert_passed(schemathesis_run(server.url, tmp_path, EXAMPLES, *extra))


@pytest.mark.timeout(330)
@pytest.mark.parametrize("folder", [f for f in ENVS if f.name != "echo_env"], ids=lambda f: f.name)
def test_stock_schemathesis_all_checks_and_stateful_pass_on_every_env(folder, tmp_path):
    log = tmp_path / "server.log"
    with cli_server(folder, log) as url:
        done = schemathesis_run(url, tmp_path, ENV_EXAMPLES.get(folder.name, EXAMPLES))
    assert_passed(done, log.read_text(errors="replace"))
