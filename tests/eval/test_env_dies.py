"""An env server that dies mid-run (SIGKILL, from inside the run) fails only the episodes
that still needed it: those already played stay as they were, each later one is an
error (never a zero), and the run finishes with its results written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenv.eval import EvalConfig, load_trajectories, run_eval
from openenv.policy import CallablePolicy

from .._served import wait_served
from ..conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


def test_an_env_that_dies_mid_run_fails_only_its_episodes(tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", str(ROOT / "envs" / "echo_env"), "--port", str(port)],
        cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_served(url, server, 60, "openenv serve")
        calls = 0

        def play(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
            nonlocal calls
            calls += 1
            if calls == 4:  # the fourth episode's first turn: the env dies under it
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)
            return {"message": "abcdefghij"}

        results = run_eval(
            EvalConfig(
                env=url, policy=CallablePolicy(play), out=tmp_path, count=6, max_turns=1,
                concurrency=1, retries=1, backoff_s=0.01,
            )
        )  # fmt: skip
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
    assert (results["episodes"], results["errors"]) == (6, 3)
    by_task = {t.task_id: t for t in load_trajectories(tmp_path)}
    assert [by_task[f"seed-{i}"].status for i in range(6)] == ["truncated"] * 3 + ["error"] * 3
    for i in range(3):
        assert by_task[f"seed-{i}"].reward == pytest.approx(1.0)  # played before it died: kept
    for i in range(3, 6):
        t = by_task[f"seed-{i}"]
        assert t.retries == 1  # a lost env is transient: tried again, then an error
        assert t.error
        assert t.reward == 0.0
        assert not t.passed
    assert results["rewards"] == pytest.approx([1.0, 1.0, 1.0])  # no zero for an error
    assert json.loads((tmp_path / "results.json").read_text())["errors"] == 3
