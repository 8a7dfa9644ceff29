"""``examples/train_arith.py`` trains the tiny model on ``envs/arith_env`` (a few steps)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "train_arith.py"


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
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [0, 1, 2]
    for row in rows:
        assert row["episodes"] == 128  # 16 prompts x 8, all scored: the env answered every call
        assert row["failed"] == 0
        assert 0.0 <= row["reward_mean"] <= 1.0
