"""``max_staleness`` > 1: rollouts run up to N steps ahead of training, each step's
staleness logged, episodes older than N versions dropped (the tiny model, on CPU)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openenv.train import train
from openenv.train._rollout import Episode
from openenv.train._trainer import split_stale

from ._count_env import CountEnv
from ._count_fixtures import small_config


def test_rollouts_run_up_to_n_steps_ahead(serve: Callable[..., Any], tmp_path: Path) -> None:
    """With N = 2 the rollouts of steps 1 and 2 start before the first update, each later
    one two updates before its own: steps train on episodes 0, 1, 2, 2 versions old."""
    server = serve(CountEnv, max_sessions=64)
    rows = train(small_config([server.url], str(tmp_path), steps=4, max_staleness=2))
    assert [r["staleness_max"] for r in rows] == [0, 1, 2, 2]
    assert [r["staleness_mean"] for r in rows] == [0.0, 1.0, 2.0, 2.0]
    assert [r["stale_dropped"] for r in rows] == [0, 0, 0, 0]
    assert all(r["episodes"] == 16 for r in rows)
    assert rows[3]["logprob_gap"] > 0  # the ratio is against the sampler's logprobs, two versions old
    server.wait_active(0)


def _episode(versions: list[int], reward: float | None = 1.0) -> Episode:
    # a prompt token (version -1), then the sampled ones with the version that sampled each
    return Episode(group=0, seed=0, session="s", versions=[-1, *versions], mask=[0] + [1] * len(versions),
                   reward=reward)  # fmt: skip


def test_episodes_older_than_n_versions_are_dropped() -> None:
    """An episode's staleness is that of its oldest sampled token (a multi-turn episode
    can span a weight push); failed episodes are neither trained on nor counted stale."""
    fresh_one, across_push, too_old, failed = (
        _episode([5, 5]),
        _episode([3, 4]),
        _episode([2, 2]),
        _episode([5], reward=None),
    )
    fresh, stale = split_stale([fresh_one, across_push, too_old, failed], step=5, max_staleness=2)
    assert fresh == [fresh_one, across_push]
    assert stale == [too_old]
    assert split_stale([across_push], step=5, max_staleness=1) == ([], [across_push])


def test_a_negative_staleness_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_staleness"):
        small_config(["http://127.0.0.1:9"], str(tmp_path), max_staleness=-1)
