"""``openenv eval rescore``: new rewards from a rubric, no sampling; the run kept as it was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from openenv.eval import EvalConfig, load_trajectories, run_eval

from ._policies import echo_run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)



def _rescore(run: object, rubric: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``openenv eval rescore RUN --rubric RUBRIC ARGS`` as a user runs it."""
    argv = [sys.executable, "-m", "openenv", "eval", "rescore", str(run), "--rubric", rubric, *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_rescore_recomputes_rewards_with_a_rubric(tmp_path: Path) -> None:
    run = tmp_path / "run"
    echo_run(run, "python:tests.eval._policies:seeded_echo", count=3, samples=2, max_turns=2)
    before = (run / "trajectories.jsonl").read_bytes()
    proc = _rescore(str(run), "tests.eval._policies:RUBRIC", "--out", str(tmp_path / "new"))
    assert proc.returncode == 0, proc.stderr
    assert (run / "trajectories.jsonl").read_bytes() == before  # the source run is untouched
    old = {t.key: t for t in load_trajectories(run)}
    new = {t.key: t for t in load_trajectories(tmp_path / "new")}
    assert old.keys() == new.keys()
    for key, t in new.items():
        expected = [
            0.5 * (len(turn.action["message"]) <= 5) + 0.5 for turn in old[key].turns
        ]  # echoed: always
        assert [turn.reward for turn in t.turns] == pytest.approx(expected)
        assert t.reward == pytest.approx(sum(expected))
        assert [turn.action for turn in t.turns] == [
            turn.action for turn in old[key].turns
        ]  # nothing sampled
        assert set(t.reward_breakdown) == {"short", "echoed"}
    assert (tmp_path / "new" / "results.json").is_file()


def test_rescore_with_an_unknown_rubric_is_one_line_and_exit_2(tmp_path: Path) -> None:
    run_eval(EvalConfig(env=str(ROOT / "envs" / "echo_env"), policy="null", out=tmp_path, count=1))
    proc = _rescore(str(tmp_path), "tests.eval._policies:NOPE")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "openenv eval: tests.eval._policies has no 'NOPE'"
