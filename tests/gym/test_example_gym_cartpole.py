"""``examples/gym_cartpole.py`` runs and prints what its docs page shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
def test_example_runs():
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "gym_cartpole.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "check_env passed" in out
    assert "episode return served 500, in-process 500" in out
    assert "8 sessions" in out
