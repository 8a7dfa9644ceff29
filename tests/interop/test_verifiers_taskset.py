"""verifiers' own OpenEnv task set (``verifiers.v1.tasksets.openenv``, verifiers 0.4)
drives our echo and coding envs: it imports ``GenericEnvClient`` from ``openenv`` and
``CallToolAction`` from ``openenv.core``, reads ``/schema``, resets and steps with the
replies of a SCRIPTED PLAYER (a test double of the model, in
``verifiers_side/drive_openenv_taskset.py``), and sums the rewards.

verifiers is not one of our dependencies, so it runs in its own venv, made once by
``scripts/side_venvs.sh verifiers`` (scripts/test.sh makes it while it sets up .venv) and
cached under ``.cache/verifiers-venv`` (gitignored): ``pip install 'verifiers>=0.4,<0.5'``
with this package and the two envs installed editable. When pip cannot install it (no
index reachable) the test skips with pip's last line. Later runs reuse the venv: the
test then costs two server starts and two driver runs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests._served import stop_child, wait_served

REPO = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("OPENENV_VERIFIERS_VENV") or REPO / ".cache" / "verifiers-venv")
#: Written after a complete install: a half-made venv is rebuilt, not used.
STAMP = VENV / "openenv-verifiers-ready"
DRIVER = Path(__file__).resolve().parent / "verifiers_side" / "drive_openenv_taskset.py"
REQUIREMENT = "verifiers>=0.4,<0.5"


def verifiers_python() -> Path:
    """The cached venv's interpreter, made by scripts/side_venvs.sh if scripts/test.sh has
    not made it already; skips when pip cannot install."""
    python = VENV / "bin" / "python"
    if STAMP.exists():
        return python
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "side_venvs.sh"), "verifiers"],
        capture_output=True, text=True, timeout=1500, env={**os.environ, "OPENENV_VERIFIERS_VENV": str(VENV)},
    )
    if done.returncode != 0 or not STAMP.exists():
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        pytest.skip(f"cannot install {REQUIREMENT} into {VENV}: {lines[-1] if lines else done.returncode}")
    return python


@pytest.fixture(scope="module")
def vf_python() -> Path:
    return verifiers_python()


@contextmanager
def served(env_dir: str, log: Path) -> Iterator[str]:
    """``python -m openenv serve envs/<env_dir>`` on a free 127.0.0.1 port; stopped after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", str(REPO / "envs" / env_dir), "--host", "127.0.0.1",
         "--port", str(port)],
        cwd=REPO, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_served(url, proc, 60, log=log)
        yield url
    finally:
        stop_child(proc, 15, group=True)


def drive(python: Path, url: str, reset: dict[str, Any], *replies: str) -> dict[str, Any]:
    done = subprocess.run([str(python), str(DRIVER), url, json.dumps(reset), *replies],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.timeout(1800)  # the first run installs verifiers; later ones reuse the venv
def test_verifiers_openenv_taskset_drives_the_echo_env(vf_python: Path, tmp_path: Path):
    with served("echo_env", tmp_path / "echo.log") as url:
        # a JSON reply, and a bare one: verifiers puts it in the one required field
        out = drive(vf_python, url, {}, '{"message": "hi"}', "plain words")
    shown = [turn["observation"]["echoed_message"] for turn in out["shown"]]
    assert shown == ["Echo environment ready!", "hi", "plain words"]
    assert out["shown"][0]["action_schema"]["title"] == "EchoAction"
    assert out["unsent"] == []
    # the echo env rewards 0.1 per character echoed: 2 + 11
    assert out["rewards"]["openenv_reward"] == pytest.approx(1.3)


@pytest.mark.timeout(1800)
def test_verifiers_openenv_taskset_drives_the_coding_env(vf_python: Path, tmp_path: Path):
    solution = ("def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
                "    return t == t[::-1]\n")
    with served("coding_env", tmp_path / "coding.log") as url:
        out = drive(vf_python, url, {"task_id": "is_palindrome"},
                    json.dumps({"code": solution}), '```json\n{"submit": true}\n```')
    first, after_code = (turn["observation"] for turn in out["shown"])
    assert first["task_id"] == "is_palindrome"
    assert after_code["exception"] is None
    assert out["unsent"] == []  # the submit ended the episode
    assert out["rewards"]["openenv_reward"] == 1.0  # every hidden test passed
