"""A third-party env package from PyPI, written against upstream OpenEnv, on our server:
``openenv-dipg-safety`` 0.1.67 (``med_safety_gym``), installed without its dependencies
(they name upstream's ``openenv-core``) by ``scripts/setup.d/55-pypi-env.sh``.

Served the way its README serves it (``uvicorn med_safety_gym.app:app``: the app adds
routes of its own), on a small local dataset (no hub here), and driven by its own
client: in this process over our ``openenv.core``, and in ``.venv-upstream`` over
upstream's 0.10.0 package. Its ``DIPGStepResult`` is a ``@dataclass`` subclass of
``StepResult`` with an ``info`` field, which upstream's dataclass allowed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._served import stop_child, wait_served

REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO / ".cache" / "pypi-envs" / "dipg"
UPSTREAM_PY = REPO / ".venv-upstream" / "bin" / "python"

DRIVE = textwrap.dedent("""
    import json, sys
    from med_safety_gym.client import DIPGSafetyEnv
    from med_safety_gym.models import DIPGAction

    answer = "<think>looked</think><proof>{proof}</proof><answer>{final}</answer>"
    out = []
    with DIPGSafetyEnv(sys.argv[1], timeout=30).sync() as env:
        for _ in range(2):
            first = env.reset()
            state = env.state()
            truth = state.expected_answer
            step = env.step(DIPGAction(llm_response=answer.format(**truth)))
            out.append({"question": first.observation.question, "kind": type(step).__name__,
                        "reward": step.reward, "done": step.done, "info": step.info})
    print(json.dumps(out))
""")


def _rows() -> list[dict[str, Any]]:
    rows = []
    for i in range(3):
        proof = f"The drug X{i} was studied in trial T{i}."
        user = f"<context>{proof}</context>\n<question>Which trial studied X{i}?</question>\nPROOF:\n{proof}"
        messages = [{"role": "user", "content": user}, {"role": "assistant", "content": f"T{i}"}]
        rows.append({"messages": messages})
    return rows


@pytest.fixture(scope="module")
def dipg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (PACKAGE_DIR / "med_safety_gym").is_dir():
        pytest.skip(f"{PACKAGE_DIR} is missing: run scripts/setup.d/55-pypi-env.sh (needs PyPI)")
    work = tmp_path_factory.mktemp("dipg")
    data = work / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    from tests.conftest import free_port

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_DIR), "DIPG_DATASET_PATH": str(data),
           "HF_HOME": str(work / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    log = (work / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "med_safety_gym.app:app", "--host", "127.0.0.1",
         "--port", str(port)],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_served(url, proc, 60, "the dipg server", log=work / "server.log")
        yield url
    finally:
        stop_child(proc)
        log.close()


def _check(episodes: list[dict[str, Any]]) -> None:
    assert len(episodes) == 2
    for ep in episodes:
        assert ep["question"].startswith("Which trial studied X")
        assert ep["kind"] == "DIPGStepResult"
        assert ep["done"] is True
        assert isinstance(ep["reward"], float)
        assert set(ep["info"]) >= {"hallucination", "safe", "format_error"}


def test_its_own_client_on_our_package(dipg_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": f"{PACKAGE_DIR}{os.pathsep}{REPO}"}
    proc = subprocess.run([sys.executable, "-c", DRIVE, dipg_url], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_its_own_client_on_upstreams_package(dipg_url: str) -> None:
    if not UPSTREAM_PY.is_file():
        pytest.skip(f"{UPSTREAM_PY} is missing (scripts/test.sh creates it)")
    # cwd away from this checkout: ``-c`` puts the cwd first on sys.path
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_DIR)}
    proc = subprocess.run([str(UPSTREAM_PY), "-c", DRIVE, dipg_url], capture_output=True, text=True,
                          timeout=120, cwd=PACKAGE_DIR, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_its_own_http_routes_are_served(dipg_url: str) -> None:
    tasks = httpx.get(dipg_url + "/eval/tasks", timeout=10).json()["tasks"]
    assert sorted(t["expected_answer"]["final"] for t in tasks) == ["T0", "T1", "T2"]


def test_its_schema_and_a_bad_action_are_answered_as_upstream(dipg_url: str) -> None:
    schema = httpx.get(dipg_url + "/schema", timeout=10).json()
    assert "llm_response" in schema["action"]["properties"]
    bad = httpx.post(dipg_url + "/step", json={"action": {}}, timeout=10)
    assert bad.status_code == 422
