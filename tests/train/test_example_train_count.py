"""``examples/train_count.py`` runs end to end (a few steps) and draws its plot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "train_count.py"


def test_example_runs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--steps", "3", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("step    0  reward_mean ")
    assert lines[-1] == f"plot: {out / 'reward.png'}"
    assert (out / "reward.png").read_bytes().startswith(b"\x89PNG")
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 3
