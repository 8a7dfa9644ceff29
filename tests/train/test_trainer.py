"""The loop: metrics, checkpoints and resume, failures, the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from openenv.cli import main as cli_main
from openenv.train import NotATextEnv, RolloutWorker, TrainConfig, TrainingFailed, read_metrics, train
from openenv.train._trainer import rollout_settings

from ._count_env import CountEnv
from ._count_fixtures import small_config

REQUIRED = (
    "step",
    "reward_mean",
    "reward_std",
    "episodes",
    "tokens",
    "frac_zero_std",
    "entropy",
    "clip_low",
    "clip_high",
    "logprob_gap",
    "gen_tokens_per_s",
    "train_tokens_per_s",
    "episodes_per_s",
    "env_latency_p50_ms",
    "env_latency_p90_ms",
    "staleness_max",
    "weight_sync_s",
    "env_wall_s",
)


def test_metrics_and_resume_give_the_same_next_step(serve: Callable[..., Any], tmp_path: Path) -> None:
    server = serve(CountEnv, max_sessions=64)
    straight = train(small_config([server.url], str(tmp_path / "a"), steps=3, checkpoint_every=2))
    assert [r["step"] for r in straight] == [0, 1, 2]
    for key in REQUIRED:
        assert key in straight[0], key
    assert straight[0]["episodes"] == 16
    assert straight[0]["failed"] == 0
    assert straight[0]["logprob_gap"] < 1e-4  # on-policy: the sampler and the trainer agree
    logged = read_metrics(tmp_path / "a")
    assert [(r["step"], r["reward_mean"], r["tokens"]) for r in logged] == [
        (r["step"], r["reward_mean"], r["tokens"]) for r in straight
    ]
    assert logged[0]["kl"] is None  # no reference model: nan is written as null

    b = tmp_path / "b"
    train(small_config([server.url], str(b), steps=2, checkpoint_every=2))
    resumed = train(small_config([server.url], str(b), steps=3, checkpoint_every=2, resume=True))
    assert [r["step"] for r in resumed] == [2]
    for key in ("reward_mean", "loss", "entropy", "tokens", "grad_norm"):
        assert resumed[0][key] == pytest.approx(straight[2][key], rel=1e-6, abs=1e-9), key
    assert [r["step"] for r in read_metrics(b)] == [0, 1, 2]
    wa = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=False)["model"]
    wb = torch.load(b / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.allclose(wa[k], wb[k]) for k in wa)
    server.wait_active(0)


def test_a_dead_env_server_fails_its_episodes_only(serve: Callable[..., Any]) -> None:
    # Mid-run (after train() found every env up), a server that dies fails the groups
    # bound for it; the worker neither stalls nor raises.
    import asyncio

    server = serve(CountEnv, max_sessions=64)
    cfg = small_config([server.url, "http://127.0.0.1:9"], "unused")
    worker = RolloutWorker("tiny", cfg.env, rollout_settings(cfg), seed=0)

    async def play() -> list[Any]:
        try:
            return await worker.rollout(0, [(g, g) for g in range(4)])
        finally:
            await worker.close()

    episodes = asyncio.run(play())
    failed = [e for e in episodes if e.reward is None]
    assert len(episodes) == 16
    assert len(failed) == 8
    assert {e.group % 2 for e in failed} == {1}  # group g goes to URL g mod 2
    assert all("cannot reach http://127.0.0.1:9" in (e.error or "") for e in failed)
    server.wait_active(0)


def test_an_unreachable_env_stops_the_run_before_the_first_step(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    server = serve(CountEnv, max_sessions=64)
    with pytest.raises(TrainingFailed, match=r"cannot reach the env at http://127\.0\.0\.1:9 \("):
        train(small_config([server.url, "http://127.0.0.1:9"], str(tmp_path), steps=2))
    assert not (tmp_path / "metrics.jsonl").exists()  # nothing ran


def test_config_file_and_names(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('env = ["http://127.0.0.1:1"]\nsteps = 7\nadvantage = "rloo"\nloss = "gspo"\n')
    cfg = TrainConfig.from_file(path, steps=9)
    assert cfg.steps == 9
    assert cfg.to_dict()["advantage"] == "rloo"
    assert cfg.to_dict()["loss"] == "gspo"
    with pytest.raises(ValueError, match="unknown advantage 'ppo'"):
        TrainConfig.from_dict({"env": ["x"], "advantage": "ppo"})
    with pytest.raises(ValueError, match="unknown config keys: stepz"):
        TrainConfig.from_dict({"env": ["x"], "stepz": 1})
    with pytest.raises(ValueError, match="group_size must be at least 2"):
        TrainConfig(env=["x"], group_size=1)


def test_cli(serve: Callable[..., Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not torch.cuda.is_available():
        assert (
            cli_main(["train", "--env", "http://127.0.0.1:9", "--device", "cuda", "--out", str(tmp_path)])
            == 2
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "no CUDA GPU is visible" in err
    server = serve(CountEnv, max_sessions=64)
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"max_new_tokens": 1, "progress": False}))
    out = tmp_path / "run"
    args = [
        "train",
        "--env",
        server.url,
        "--model",
        "tiny",
        "--steps",
        "2",
        "--group-size",
        "2",
        "--prompts-per-step",
        "3",
        "--max-turns",
        "1",
        "--workers",
        "0",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--config",
        str(config),
        "--no-tensorboard",
        "--sampler",
        "hf",
        "--lr",
        "5e-4",
        "--max-new-tokens",
        "2",
        "--advantage",
        "rloo",
        "--loss",
        "gspo",
        "--seed",
        "3",
    ]
    assert cli_main(args) == 0
    written = json.loads((out / "config.json").read_text())
    assert (written["lr"], written["max_new_tokens"], written["seed"]) == (5e-4, 2, 3)  # flags beat the file
    assert (written["advantage"], written["loss"]) == ("rloo", "gspo")
    assert not (out / "tb").exists()
    rows = read_metrics(out)
    assert [r["step"] for r in rows] == [0, 1]
    assert rows[0]["episodes"] == 6
    assert cli_main(["train", "plot", str(out)]) == 0
    png = (out / "reward.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 1000
    assert cli_main(["train", "plot", str(tmp_path / "empty")]) == 2


def test_one_step_off_policy(serve: Callable[..., Any], tmp_path: Path) -> None:
    server = serve(CountEnv, max_sessions=64)
    rows = train(small_config([server.url], str(tmp_path), steps=3, max_staleness=1))
    # step 0 waits for its own rollout; later steps train on the rollout started one update earlier
    assert [r["staleness_max"] for r in rows] == [0, 1, 1]
    assert all(r["episodes"] == 16 for r in rows)
    assert rows[2]["logprob_gap"] > 0  # the ratio is taken against the older sampler's logprobs
    rows = train(small_config([server.url], str(tmp_path / "strict"), steps=2))
    assert [r["staleness_max"] for r in rows] == [0, 0]


def test_an_env_that_is_not_a_text_env_takes_an_adapter(serve: Callable[..., Any], tmp_path: Path) -> None:
    from echo_env import EchoEnv

    server = serve(EchoEnv, max_sessions=64)
    with pytest.raises(NotATextEnv, match="observation_text adapter"):  # before the first step
        train(small_config([server.url], str(tmp_path), steps=1))
    cfg = TrainConfig.from_dict(
        {
            **small_config([server.url], str(tmp_path / "b"), steps=1).to_dict(),
            "observation_adapter": "tests.train._count_fixtures:echo_text",
        }
    )
    rows = train(cfg)
    assert rows[0]["episodes"] == 16  # echo's action has one string field: message
    assert rows[0]["reward_mean"] > 0  # 0.1 per character echoed


def test_without_the_train_extra_one_line_names_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    fake = tmp_path / "torch"  # shadows the real torch: importing it fails as if absent
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "train", "--env", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "'train' extra" in proc.stderr
    assert "pip install 'openenv[train]'" in proc.stderr
