"""``examples/rewards_polite_echo.py`` runs and prints what its docs page shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)
def test_example_runs():
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "rewards_polite_echo.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "please help" in out
    assert "brevity=" in out
    assert "episode=3.00" in out
