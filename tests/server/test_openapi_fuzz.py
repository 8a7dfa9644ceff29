"""A stock OpenAPI fuzzer (schemathesis) over ``/openapi.json`` of every env in ``envs/``.

Each env folder with an ``openenv.envs`` entry point is served by the real CLI
(``python -m openenv serve <folder>``) on 127.0.0.1; schemathesis loads its published
document and sends generated requests to every operation, checking that no answer is
a 5xx and that every answer's status code, content type and body are the documented
ones. Bounded: a few examples per operation, a per-request timeout, and the module's
per-test time limit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

schemathesis = pytest.importorskip("schemathesis", reason="the fuzzer comes with the 'dev' extra")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from ..conftest import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
#: Examples per operation. The routes are the same for every env, only the models
#: differ, so the echo env gets the most, and invalid requests (slow to generate: about
#: 1 s each) are sent to the echo env only; other envs' resets are slower (processes,
#: browsers), which the suite's time budget pays for.
MAX_EXAMPLES = {"echo_env": 6}
OTHER_ENVS_MAX_EXAMPLES = 2
NEGATIVE_ENVS = {"echo_env"}


@schemathesis.check
def not_a_server_error_unless_asked(ctx: Any, response: Any, case: Any) -> bool | None:
    """``not_a_server_error``, except the documented ``504 DEADLINE_EXCEEDED`` of a request
    that set its own ``timeout_s`` (the fuzzer picks deadlines of microseconds)."""
    asked = isinstance(case.body, dict) and bool(case.body.get("timeout_s"))
    if response.status_code == 504 and asked and response.json()["error"]["code"] == "DEADLINE_EXCEEDED":
        return None
    return not_a_server_error(ctx, response, case)


CHECKS = [not_a_server_error_unless_asked, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def servable_envs() -> list[Path]:
    """``envs/*/`` folders that ``openenv serve <folder>`` serves (an entry point)."""
    found = []
    for folder in sorted(ROOT.glob("envs/*/")):
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            continue
        with pyproject.open("rb") as f:
            project = tomllib.load(f).get("project", {})
        if project.get("entry-points", {}).get("openenv.envs"):
            found.append(folder)
    return found


ENVS = servable_envs()


def test_echo_env_is_among_the_fuzzed():
    assert ROOT / "envs" / "echo_env" in ENVS


CASES = [pytest.param(folder, "positive", id=f"{folder.name}-positive") for folder in ENVS] + [
    pytest.param(folder, "negative", id=f"{folder.name}-negative") for folder in ENVS
    if folder.name in NEGATIVE_ENVS
]


@pytest.fixture(scope="module")
def served_env(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", str(request.param), "--host", "127.0.0.1",
         "--port", str(port), "--max-sessions", "4096"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"openenv serve {request.param.name} exited with {proc.returncode}: "
                            f"{proc.stdout.read() if proc.stdout else ''}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"openenv serve {request.param.name} was not healthy within 60 s")
            time.sleep(0.1)
        yield request.param.name, url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if proc.stdout is not None:  # the server's log (tracebacks of 500s) for a failed test
            print(proc.stdout.read()[-20000:])


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("served_env", "mode"), CASES, indirect=["served_env"])
def test_no_5xx_and_every_answer_is_documented(served_env: tuple[str, str], mode: str) -> None:
    """Every operation, valid (``positive``) and invalid (``negative``) requests."""
    env_name, url = served_env
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12  # the core routes, at least
    generation = GenerationMode.POSITIVE if mode == "positive" else GenerationMode.NEGATIVE
    fuzzed: list[str] = []
    examples = MAX_EXAMPLES.get(env_name, OTHER_ENVS_MAX_EXAMPLES)
    for operation in operations:

        @given(case=operation.as_strategy(generation))
        @settings(max_examples=examples, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), database=None)
        def check(case: Any) -> None:
            t0 = time.monotonic()
            case.call_and_validate(checks=CHECKS, timeout=15)
            if os.environ.get("FUZZ_DEBUG"):
                print(f"{time.monotonic() - t0:.3f} {case.operation.label} {str(case.body)[:80]}", flush=True)

        try:
            check()
        except Unsatisfiable:
            assert mode == "negative", operation.label  # nothing in it can be made invalid
            continue
        except Exception as exc:  # name the operation; hypothesis gives the failing case
            raise AssertionError(f"{operation.label} ({mode}): {exc}") from exc
        fuzzed.append(operation.label)
    # negative: the operations with a body (a string path parameter cannot be invalid)
    assert len(fuzzed) >= (12 if mode == "positive" else 4), fuzzed
