"""``openenv train`` never reports success for a run that trained on nothing.

The real CLI in a subprocess: an unreachable env stops it before the first step, a step
in which no episode succeeded stops it after that step; each is one line on stderr (no
traceback) and exit status 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openenv import Execution
from openenv.train import TrainingFailed, read_metrics, train

from ..conftest import free_port
from ._count_env import CountEnv, CountObservation
from ._count_fixtures import small_config

ROOT = Path(__file__).parents[2]


class BrokenCountEnv(CountEnv):
    """``CountEnv`` whose every reset fails (an env bug the server reports per session)."""

    execution = Execution.INLINE

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None
    ) -> CountObservation:
        raise RuntimeError("the task data is missing")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv", "train", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_unreachable_env_one_line_and_exit_1(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    proc = run_cli("--env", url, "--steps", "3", "--out", str(tmp_path), "--no-tensorboard")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"openenv train: cannot reach the env at {url} (")
    assert "openenv serve" in proc.stderr  # what to do
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "metrics.jsonl").exists()


def test_a_step_with_no_successful_episode_one_line_and_exit_1(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    server = serve(BrokenCountEnv, max_sessions=64)
    out = tmp_path / "run"
    proc = run_cli(
        "--env", server.url, "--steps", "5", "--group-size", "2", "--prompts-per-step", "2",
        "--max-new-tokens", "1", "--out", str(out), "--no-tensorboard",
    )
    assert proc.returncode == 1, proc.stderr
    # besides the progress line ("\rstep 1/5 [...]", ended when the run stops), one line
    lines = [ln for ln in proc.stderr.splitlines() if ln and not ln.startswith("step 1/5 ")]
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("openenv train: step 0: no episode succeeded (4 failed; first error: reset: ")
    assert "the task data is missing" in line
    assert f"the env server at {server.url} is up" in line
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    rows = read_metrics(out)  # the failed step is on record, and nothing after it
    assert [(r["step"], r["episodes"], r["failed"]) for r in rows] == [(0, 0, 4)]


def test_train_raises_after_the_failed_step(serve: Callable[..., Any], tmp_path: Path) -> None:
    server = serve(BrokenCountEnv, max_sessions=64)
    with pytest.raises(TrainingFailed, match="step 0: no episode succeeded"):
        train(small_config([server.url], str(tmp_path), steps=3))
    assert [r["step"] for r in read_metrics(tmp_path)] == [0]
