"""Metrics as TensorBoard events in ``DIR/tb/``, read back with TensorBoard's own reader."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openenv.train import read_metrics, train
from openenv.train._metrics import tensorboard_writer

from ._count_env import CountEnv
from ._count_fixtures import small_config

pytest.importorskip(
    "tensorboard", reason="TensorBoard events need the tensorboard package (the 'train' extra)"
)


def _scalars(folder: Path, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_reward_mean_per_step_in_tensorboard_and_resume_purges(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    server = serve(CountEnv, max_sessions=64)
    train(small_config([server.url], str(tmp_path), steps=2))
    at_two = (tmp_path / "checkpoint.pt").read_bytes()
    train(small_config([server.url], str(tmp_path), steps=3, resume=True))
    # as if the run had stopped after logging step 2 but before its checkpoint: resuming
    # from step 2 logs it again, and TensorBoard keeps only the new event
    (tmp_path / "checkpoint.pt").write_bytes(at_two)
    train(small_config([server.url], str(tmp_path), steps=3, resume=True))
    rows = read_metrics(tmp_path)
    assert [r["step"] for r in rows] == [0, 1, 2]
    events = _scalars(tmp_path / "tb", "reward_mean")
    assert [s for s, _ in events] == [0, 1, 2]
    for (_, value), row in zip(events, rows, strict=True):
        assert value == pytest.approx(row["reward_mean"], rel=1e-6)
    losses = _scalars(tmp_path / "tb", "loss")
    assert [s for s, _ in losses] == [0, 1, 2]
    server.wait_active(0)


def test_tensorboard_off(serve: Callable[..., Any], tmp_path: Path) -> None:
    server = serve(CountEnv, max_sessions=64)
    rows = train(small_config([server.url], str(tmp_path), steps=1, tensorboard=False))
    assert len(rows) == 1
    assert not (tmp_path / "tb").exists()


def test_without_the_tensorboard_package_there_is_no_writer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails as if absent
    assert tensorboard_writer(tmp_path / "tb") is None
    assert not (tmp_path / "tb").exists()
