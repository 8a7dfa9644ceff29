"""The learner as a Monarch ``TrainerActor``: weights reach the rollout actors, resume works."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from openenv.train import read_metrics, train

from ._count_env import CountEnv
from ._count_fixtures import small_config

pytest.importorskip("monarch.actor", reason="the trainer actor needs torchmonarch (the 'train' extra)")

KEYS = ("reward_mean", "tokens", "loss", "entropy", "grad_norm", "logprob_gap")


@pytest.mark.timeout(180)
def test_trainer_actor_matches_in_process_and_resumes(serve: Callable[..., Any], tmp_path: Path) -> None:
    server = serve(CountEnv, max_sessions=64)
    local = train(small_config([server.url], str(tmp_path / "local"), steps=3, checkpoint_every=2))
    out = tmp_path / "actor"
    first = train(small_config([server.url], str(out), steps=2, checkpoint_every=2, workers=1))
    resumed = train(small_config([server.url], str(out), steps=3, checkpoint_every=2, workers=1, resume=True))
    remote = first + resumed
    assert [r["step"] for r in remote] == [0, 1, 2]
    assert [r["step"] for r in read_metrics(out)] == [0, 1, 2]
    assert all(r["episodes"] == 16 and r["failed"] == 0 for r in remote)
    # every step samples with the weights the trainer actor pushed after the last update
    assert all(r["logprob_gap"] < 1e-4 for r in remote), [r["logprob_gap"] for r in remote]
    # one worker gets every group, seeded as the in-process worker is: the same run, and
    # resuming from the actor's checkpoint gives the same next step
    for a, b in zip(local, remote, strict=True):
        for key in KEYS:
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-5), (a["step"], key)
    wa = torch.load(tmp_path / "local" / "checkpoint.pt", weights_only=False)["model"]
    wb = torch.load(out / "checkpoint.pt", weights_only=False)["model"]
    # float noise only (the learner runs on 1 thread there, 2 here); one Adam step moves
    # each weight by up to lr = 3e-3
    diffs = {k: float((wa[k] - wb[k]).abs().max()) for k in wa}
    assert max(diffs.values()) < 3e-4, diffs
    server.wait_active(0)


@pytest.mark.timeout(120)
def test_two_workers_pipelined_train_off_the_trainer_actor(serve: Callable[..., Any], tmp_path: Path) -> None:
    server = serve(CountEnv, max_sessions=64)
    rows = train(small_config([server.url], str(tmp_path), steps=3, workers=2, max_staleness=1))
    assert [r["staleness_max"] for r in rows] == [0, 1, 1]
    assert all(r["episodes"] == 16 for r in rows)
    assert all(r["loss"] is not None for r in rows)
    assert rows[0]["logprob_gap"] < 1e-4
    assert rows[2]["logprob_gap"] > 0  # trained on episodes sampled one version earlier
    assert (tmp_path / "checkpoint.pt").exists()
    server.wait_active(0)


def test_a_bad_model_is_one_line_before_any_process_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from openenv.cli import main as cli_main

    args = ["train", "--env", "http://127.0.0.1:9", "--model", "/no/such/model", "--workers", "2"]
    assert cli_main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "neither the preset 'tiny' nor a local model folder" in err


def test_each_process_gets_its_own_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv.train._actor import pin_gpu

    if torch.cuda.is_available():
        pytest.skip("CUDA is initialised here: the CUDA_VISIBLE_DEVICES path cannot be checked")
    import os

    for index, gpus, expected in ((0, 2, "0"), (2, 3, "2"), (3, 2, "1")):
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # once per process, really
        assert pin_gpu(index, gpus) == "cuda"
        assert os.environ["CUDA_VISIBLE_DEVICES"] == expected
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    pin_gpu(3, 2)  # fewer GPUs than processes: they share, round robin
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "6"
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        pin_gpu(0, 0)
