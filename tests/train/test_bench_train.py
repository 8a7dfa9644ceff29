"""``bench/train.py`` end to end: our trainer and TRL's ``GRPOTrainer`` on the ``small`` random
Llama for 2 steps on CPU, each in its own child process against one loopback env server.
Checks the report's shape and that both did the same work; no timing is asserted."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the TRL comparison needs trl (the 'train' extra)")

ROOT = Path(__file__).parents[2]


def test_bench_train_runs_ours_and_trl(tmp_path: Path) -> None:
    out = tmp_path / "train.json"
    cmd = [sys.executable, str(ROOT / "bench" / "train.py"), "--model", "small", "--steps", "2"]
    cmd += ["--prompts", "1", "--new-tokens", "2", "--threads", "1", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert (report["model"], report["device"], report["threads"]) == ("small", "cpu", 1)
    (round_,) = report["rounds"]
    ours, trl = round_["ours"], round_["trl"]
    for result in (ours, trl):
        assert result["steps"] == 2
        assert result["episodes_per_step"] == 8  # 1 prompt x a group of 8
        assert 0 < result["sampled_tokens_per_step"] <= 8 * 2
        for key in (
            "step_time_s",
            "rollout_s",
            "gen_tokens_per_s",
            "train_tokens_per_s",
            "cpu_s_per_step",
            "peak_mib",
        ):
            assert math.isfinite(result[key]), (key, result)
            assert result[key] > 0, (key, result)
        assert 0 <= result["env_share"] <= 1
        assert len(result["loadavg_1min"]) == 2
    assert ours["trainer"].startswith("openenv.train")
    assert trl["trainer"].startswith("trl ")
    ratios = round_["ours_over_trl"]
    assert ratios["step_time_s"] == pytest.approx(ours["step_time_s"] / trl["step_time_s"])
    assert report["ours_over_trl_median"] == ratios


def test_bench_train_rejects_one_step() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "train.py"), "--steps", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "--steps must be at least 2" in proc.stderr
