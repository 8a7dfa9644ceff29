"""Run a script from ``examples/`` as a user would, and return what it printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str, timeout_s: float = 110) -> str:
    """``python examples/<name> ARGS`` from the repository root; fails with its stderr tail."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / name), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout
