"""The tiny model learns the arith env's easy level over the protocol with 2 Monarch
rollout worker processes, under the settings of ``envs/arith_env/train_tiny.toml``."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from arith_env import EASY, ArithEnv

from openenv.train import TrainConfig, train

pytest.importorskip("monarch.actor", reason="rollout workers need torchmonarch (the 'train' extra)")

SETTINGS = Path(__file__).parents[2] / "envs" / "arith_env" / "train_tiny.toml"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tiny_learns_arith_with_two_rollout_workers(serve: Callable[..., Any], tmp_path: Path) -> None:
    # The server's defaults are the easy level: the trainer's resets send only a seed.
    server = serve(ArithEnv, max_sessions=512, env_kwargs=EASY.model_dump(exclude_unset=True))
    cfg = TrainConfig.from_file(
        SETTINGS,
        env=[server.url],
        out=str(tmp_path),
        workers=2,
        progress=False,
        checkpoint_every=1000,
        env_timeout_s=10.0,
        episode_timeout_s=30.0,
    )
    rows = train(cfg)
    rewards = [r["reward_mean"] for r in rows]
    first, last = statistics.fmean(rewards[:10]), statistics.fmean(rewards[-10:])
    assert len(rows) == 100
    assert all(r["episodes"] == 256 and r["failed"] == 0 for r in rows)
    # One-character answers: reward = 0.1 (a digit) + 0.9 (the exact sum), so a mean
    # above 0.6 needs more than half of the sums right (always answering the most common
    # sum, 3, scores 0.325).
    assert first < 0.2, rewards
    assert last > 0.6, rewards
    server.wait_active(0)
