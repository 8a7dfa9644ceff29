"""``examples/train_arith.py`` trains the tiny model on ``envs/arith_env`` (a few steps)."""

from __future__ import annotations

import json
from pathlib import Path

from .._examples import run_example


def test_example_runs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    stdout = run_example("train_arith.py", "--steps", "3", "--out", str(out), timeout_s=90)
    lines = stdout.splitlines()
    assert lines[0].startswith("step    0  reward_mean ")
    assert lines[-1] == f"plot: {out / 'reward.png'}"
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [0, 1, 2]
    for row in rows:
        assert row["episodes"] == 256  # 16 prompts x 16, all scored: the env answered every call
        assert row["failed"] == 0
        assert 0.0 <= row["reward_mean"] <= 1.0
