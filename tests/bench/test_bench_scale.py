"""``bench/bench_scale.py`` end to end at small numbers: 2 Monarch process-job hosts,
64 named sessions, the 1- and 2-replica scaling rounds of 1 s, one replica killed and
replaced. Checks the report's shape, that every session opened and stepped without
error, that the replacement served a session and that no process was left; no timing
is asserted."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("monarch.actor", reason="Monarch (the train extra) is not installed")

ROOT = Path(__file__).parents[2]


@pytest.mark.timeout(400)  # three meshes of two hosts start on a loaded machine
def test_bench_scale_runs_every_part(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    cmd = [sys.executable, str(ROOT / "bench" / "bench_scale.py"), "--hosts", "2", "--sessions", "64"]
    cmd += ["--conns", "2", "--chunk", "8", "--threads", "2", "--scale-sessions", "4", "--scale-conns", "1"]
    cmd += ["--rounds", "1", "--window", "1", "--repeats", "1", "--kill", "replica", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=380, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    sessions = report["sessions"]
    assert (sessions["opened"], sessions["active_total"]) == (64, 64)
    assert sessions["errors"] == {"reset": 0, "step": 0, "wrong": 0}
    assert sorted(r["sessions"] for r in sessions["replicas"]) == [32, 32]  # 2 connections each
    scaling = report["scaling"]
    assert sorted(scaling["rates"]) == ["1", "2"]
    assert scaling["errors"] == 0
    assert all(r > 0 for rates in scaling["rates"].values() for r in rates)
    recovery = report["recovery_replica"]
    assert recovery["replaced"] == 1
    (seconds,) = recovery["times_s"]
    assert math.isfinite(seconds)  # the replacement served a session within the bound
    assert report["survivors"] == []
    assert "loadavg_at_end" in report["machine"]
