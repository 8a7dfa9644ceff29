"""``examples/tasks_quiz.py`` runs and prints what its docs page shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
def test_example_runs():
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "tasks_quiz.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "by seed:  train-0 then train-0" in out
    assert "TASK_NOT_FOUND" in out
    assert "'id': 'test-0'" in out
