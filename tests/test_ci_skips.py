"""With ``CI=true`` a skipped Docker (or interop) test is a failure; skips are reported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A Docker test that skips when no engine answers (the engine is pointed at nothing).
DOCKER_TEST = "tests/docker/test_cli_run.py::test_run_of_a_missing_image_fails_with_a_message"


def run_docker_test(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["DOCKER_HOST"] = f"unix://{tmp_path}/no-engine.sock"
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", DOCKER_TEST],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_outside_ci_the_skip_is_reported_with_its_reason(tmp_path):
    proc = run_docker_test(tmp_path, None)
    assert proc.returncode == 0, proc.stdout
    assert "1 skipped" in proc.stdout
    assert "SKIPPED [1]" in proc.stdout  # -rs in addopts
    assert "container tests need a Docker engine" in proc.stdout


def test_in_ci_the_skip_is_a_failure(tmp_path):
    proc = run_docker_test(tmp_path, "true")
    assert proc.returncode == 1, proc.stdout
    assert "1 error" in proc.stdout  # the skip came from a fixture: a setup error
    assert "CI=true: the interop and Docker tests must run, not skip" in proc.stdout
    assert "container tests need a Docker engine" in proc.stdout
