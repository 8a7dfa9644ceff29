"""``openenv eval`` on the echo env: trajectories, results, seeds, a killed run resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from openenv.eval import EvalConfig, episode_seed, load_dataset, load_trajectories, run_eval
from openenv.eval._trajectory import iter_trajectories

ROOT = Path(__file__).resolve().parents[2]
ECHO = str(ROOT / "envs" / "echo_env")
SEEDED = "python:tests.eval._policies:seeded_echo"
pytestmark = pytest.mark.timeout(300)  # runs serve an env and play dozens of episodes; slower when loaded


def _play(t) -> tuple:
    return (t.task_id, t.sample, t.seed, t.status, t.reward, [turn.action for turn in t.turns])


def test_a_run_writes_one_trajectory_per_pair_and_the_results(tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(
            env=ECHO,
            policy="python:tests.eval._policies:ten_chars",
            out=tmp_path,
            samples=3,
            count=4,
            max_turns=2,
            concurrency=3,
        )
    )
    trajectories = load_trajectories(tmp_path)
    assert sorted(t.key for t in trajectories) == [(f"seed-{i}", s) for i in range(4) for s in range(3)]
    assert all(
        t.status == "truncated" and t.reward == pytest.approx(2.0) and len(t.turns) == 2 for t in trajectories
    )
    assert all(t.env == "echo_env" and t.env_version and t.policy == "ten_chars" for t in trajectories)
    assert all(t.seed == episode_seed(0, t.task_id, t.sample) for t in trajectories)
    assert results["episodes"] == 12
    assert results["errors"] == 0
    assert results["k"] == 3
    assert results["pass_at_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    assert results["mean_reward"] == pytest.approx(2.0)
    assert results["env_s"] > 0
    assert results["policy_s"] >= 0
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["pass_at_k"] == results["pass_at_k"]
    dataset = load_dataset(tmp_path)
    assert dataset.num_rows == 12
    assert {"task_id", "sample", "reward", "turns"} <= set(dataset.column_names)


def test_the_same_seed_plays_the_same_episodes(tmp_path: Path) -> None:
    a = run_eval(EvalConfig(env=ECHO, policy=SEEDED, out=tmp_path / "a", samples=2, count=3, max_turns=3))
    b = run_eval(EvalConfig(env=ECHO, policy=SEEDED, out=tmp_path / "b", samples=2, count=3, max_turns=3))
    c = run_eval(
        EvalConfig(env=ECHO, policy=SEEDED, out=tmp_path / "c", samples=2, count=3, max_turns=3, seed=1)
    )
    plays = [sorted(map(_play, load_trajectories(tmp_path / d))) for d in "abc"]
    assert plays[0] == plays[1]
    assert plays[0] != plays[2]
    assert a["mean_reward"] == b["mean_reward"]
    assert c["episodes"] == 6


def test_a_folder_of_a_run_needs_resume(tmp_path: Path) -> None:
    from openenv._exceptions import EvalError

    run_eval(EvalConfig(env=ECHO, policy="null", out=tmp_path, count=1))
    with pytest.raises(EvalError, match="--resume"):
        run_eval(EvalConfig(env=ECHO, policy="null", out=tmp_path, count=1))
    with pytest.raises(EvalError, match="policy"):
        run_eval(EvalConfig(env=ECHO, policy="random", out=tmp_path, count=1, resume=True))


def test_a_line_cut_by_a_kill_is_dropped_before_resuming(tmp_path: Path) -> None:
    run_eval(EvalConfig(env=ECHO, policy=SEEDED, out=tmp_path, count=2, max_turns=1))
    with (tmp_path / "trajectories.jsonl").open("ab") as f:
        f.write(b'{"run_id": "cut", "task_id": "seed-')  # what a SIGKILL mid-write leaves
    run_eval(EvalConfig(env=ECHO, policy=SEEDED, out=tmp_path, count=4, max_turns=1, resume=True))
    lines = (tmp_path / "trajectories.jsonl").read_bytes().splitlines()
    assert len(lines) == 4
    assert all(json.loads(line)["run_id"] != "cut" for line in lines)
    assert sorted(t.key for t in load_trajectories(tmp_path)) == [(f"seed-{i}", 0) for i in range(4)]


def _cli(*args: str, **kwargs) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "openenv", "eval", *args],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.timeout(400)  # three runs of 40 episodes as processes; minutes on a loaded machine
def test_sigkill_halfway_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    args = [
        ECHO,
        "-p",
        "python:tests.eval._policies:slow_seeded_echo",
        "-k",
        "4",
        "--count",
        "10",
        "--max-turns",
        "3",
        "-c",
        "4",
        "--no-progress",
    ]
    killed = tmp_path / "killed"
    # the episodes past the first 16 are held (tests/eval/_policies.py): the kill lands halfway
    proc = _cli(*args, "-o", str(killed), env={**os.environ, "OPENENV_TEST_HOLD_AFTER": "16"})
    lines = 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        lines = len(list(iter_trajectories(killed / "trajectories.jsonl")))
        if lines >= 12:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.communicate()}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {t.key: _play(t) for t in iter_trajectories(killed / "trajectories.jsonl")}
    assert 12 <= len(before) <= 16  # killed halfway: the held episodes never ended

    resumed = _cli(*args, "-o", str(killed), "--resume")
    _out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    whole = _cli(*args, "-o", str(tmp_path / "whole"))
    assert whole.communicate(timeout=120)
    assert whole.returncode == 0

    records = list(iter_trajectories(killed / "trajectories.jsonl"))
    counts = Counter(t.key for t in records)
    assert max(counts.values()) == 1, "a pair that had finished was played again"
    assert {t.key: _play(t) for t in records if t.key in before} == before  # kept as they were
    union = sorted(_play(t) for t in records)
    assert union == sorted(_play(t) for t in load_trajectories(tmp_path / "whole"))
    assert len(union) == 40


def _one_line_exit_2(*args: str, env: dict[str, str] | None = None) -> str:
    proc = _cli(*args, env={**os.environ, **(env or {})})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("openenv eval: "), err
    assert "Traceback" not in err
    return lines[0]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = str(tmp_path / "o")
    assert "unknown policy 'nope'" in _one_line_exit_2(ECHO, "-p", "nope", "-o", out)
    assert "unknown env" in _one_line_exit_2(str(tmp_path / "no_env"), "-p", "null", "-o", out)
    assert "at least 1" in _one_line_exit_2(ECHO, "-p", "null", "-o", out, "-k", "0")
    assert "--all plays every task" in _one_line_exit_2(
        ECHO, "-p", "null", "-o", out, "--all", "--count", "2"
    )
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = _one_line_exit_2(
        ECHO, "-p", f"openai:m?base_url=http://127.0.0.1:{port}/v1", "-o", out, env={"OPENAI_API_KEY": "k"}
    )
    assert "cannot reach the model server" in line
    url = f"http://127.0.0.1:{port}"  # an env URL nobody answers
    assert f"no env server answers at {url}" in _one_line_exit_2(url, "-p", "null", "-o", out)
    assert not Path(out).exists()  # refused before anything was written


def test_an_env_by_url(tmp_path: Path) -> None:
    from echo_env import EchoEnv

    from openenv.server import create_app, serve_in_background

    with serve_in_background(create_app(EchoEnv)) as server:
        results = run_eval(
            EvalConfig(env=server.url, policy=SEEDED, out=tmp_path, count=2, samples=2, max_turns=2)
        )
    assert results["env"] == "echo_env"
    assert results["episodes"] == 4
    assert results["errors"] == 0


def test_the_progress_line_counts_and_estimates() -> None:
    import io

    from openenv.eval._progress import Progress
    from openenv.eval._trajectory import Trajectory

    stream = io.StringIO()
    progress = Progress(4, stream=stream)
    done = Trajectory(
        run_id="r", env="e", policy="p", task_id="t", sample=0, seed=0, status="done", passed=True
    )
    failed = done.model_copy(update={"status": "error", "passed": False})
    for t in (done, failed, done, done):
        progress.advance(t)
    progress.close()
    assert progress.line().startswith("[########################] 4/4 episodes, 3 passed, 1 errors")
    assert "ETA 0:00:00" in stream.getvalue()
    assert stream.getvalue().endswith("\n")


def test_a_run_with_errors_exits_1_and_says_so(tmp_path: Path) -> None:
    arith = str(ROOT / "envs" / "arith_env")  # it ships no reference solution: each episode errs
    proc = _cli(arith, "-p", "oracle", "-o", str(tmp_path), "--count", "2", "--no-progress")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "2 episodes, 2 errors; mean reward - (95% CI -)" in out
    assert err.strip() == (
        "openenv eval: 2 episodes errored (2 NoSolution): each error is in trajectories.jsonl; "
        "--resume plays them again"
    )
    assert len(load_trajectories(tmp_path)) == 2  # written all the same


def test_the_pass_threshold_and_the_success_flag_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Echo pays 1.0 a step of ten characters: two turns are 2.0. A threshold of 3 fails
    every episode; of 2, passes it; ``--ignore-success`` is accepted (echo sets no flag)."""
    from openenv.eval._cli import main

    base = ["run", ECHO, "-p", "python:tests.eval._policies:ten_chars", "--count", "2", "--max-turns", "2"]
    assert main([*base, "-o", str(tmp_path / "a"), "--no-progress", "--pass-threshold", "3"]) == 0
    assert "pass@1 0.000" in capsys.readouterr().out
    argv = [*base, "-o", str(tmp_path / "b"), "--no-progress", "--pass-threshold", "2", "--ignore-success"]
    assert main(argv) == 0
    assert "pass@1 1.000" in capsys.readouterr().out
    assert json.loads((tmp_path / "b" / "run.json").read_text())["pass_rule"] == {
        "threshold": 2.0,
        "use_success": False,
    }
