"""``examples/train_count.py`` runs end to end (a few steps) and draws its plot."""

from __future__ import annotations

from pathlib import Path

from .._examples import run_example


def test_example_runs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    stdout = run_example("train_count.py", "--steps", "3", "--out", str(out), timeout_s=90)
    lines = stdout.splitlines()
    assert lines[0].startswith("step    0  reward_mean ")
    assert lines[-1] == f"plot: {out / 'reward.png'}"
    assert (out / "reward.png").read_bytes().startswith(b"\x89PNG")
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 3
