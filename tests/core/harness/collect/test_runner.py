"""``CollectRunner``: rollouts into ``results.jsonl``, resumable and filtered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openenv.core.harness import HarnessRunLimits, MCPHarnessAdapter
from openenv.core.harness.collect import CollectRunner, RolloutSerializer

from .._game import GameFactory, guesses


def _runner(tmp_path: Path, factory: Any = None, tasks: Any = None) -> CollectRunner:
    return CollectRunner(
        session_factory=factory or GameFactory(),
        harness_adapter=MCPHarnessAdapter(),
        serializer=RolloutSerializer(tmp_path),
        tasks=tasks,
        limits=HarnessRunLimits(max_turns=2),
    )


def test_collect_writes_one_line_per_episode(tmp_path: Path) -> None:
    factory = GameFactory()
    result = _runner(tmp_path, factory, tasks=[3, 9, 3]).run(
        model_step=guesses(3), num_episodes=3, episode_id_prefix="g"
    )
    assert (result.num_collected, result.num_skipped, result.num_dropped, result.num_failed) == (3, 0, 0, 0)
    assert result.episode_ids == ["g-000000", "g-000001", "g-000002"]
    assert (result.avg_reward, result.success_rate) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["episode_id"], r["task"], r["reward"], r["done"]) for r in rows] == [
        ("g-000000", 3, 1.0, True),
        ("g-000001", 9, 0.0, False),
        ("g-000002", 3, 1.0, True),
    ]
    assert [c.resets[0]["episode_id"] for c in factory.clients] == result.episode_ids
    assert all(c.closed == 1 for c in factory.clients)


def test_resume_skips_written_episodes_and_keeps_tasks_aligned(tmp_path: Path) -> None:
    _runner(tmp_path, tasks=[1, 2]).run(model_step=guesses(1), num_episodes=2)
    factory = GameFactory()
    again = _runner(tmp_path, factory, tasks=[1, 2, 3, 4]).run(model_step=guesses(1), num_episodes=4)
    assert (again.num_collected, again.num_skipped) == (2, 2)
    assert [c.secret for c in factory.clients] == [3, 4]
    records = RolloutSerializer(tmp_path).read_episodes()
    assert [(r.episode_id, r.task) for r in records] == [
        ("ep-000000", 1),
        ("ep-000001", 2),
        ("ep-000002", 3),
        ("ep-000003", 4),
    ]


def test_without_resume_the_old_file_is_moved_aside(tmp_path: Path) -> None:
    _runner(tmp_path).run(model_step=guesses(3), num_episodes=1)
    with pytest.warns(RuntimeWarning, match="moved existing results file"):
        fresh = _runner(tmp_path).run(model_step=guesses(3), num_episodes=1, resume=False)
    assert (fresh.num_collected, fresh.num_skipped) == (1, 0)
    assert len(list(tmp_path.glob("results.*.bak.jsonl"))) == 1
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 1


def test_should_keep_drops_episodes(tmp_path: Path) -> None:
    result = _runner(tmp_path, tasks=[3, 8, 3]).run(
        model_step=guesses(3), num_episodes=3, should_keep=lambda r: r.reward > 0
    )
    assert (result.num_collected, result.num_dropped, result.success_rate) == (2, 1, 1.0)
    assert RolloutSerializer(tmp_path).collected_episode_ids() == {"ep-000000", "ep-000002"}


class _Flaky(GameFactory):
    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> Any:
        if task == "down":
            raise ConnectionError("env is down")
        return super().create(task, seed, episode_id)


def test_a_failing_episode_is_counted_and_the_run_goes_on(tmp_path: Path) -> None:
    def wrong_tool(messages: Any, tools: Any, sampling: Any) -> Any:
        raise RuntimeError("model crashed")

    factory = _Flaky()
    result = _runner(tmp_path, factory, tasks=["down", 3]).run(model_step=guesses(3), num_episodes=2)
    assert (result.num_collected, result.num_failed) == (1, 1)
    crashed = _runner(tmp_path / "b", factory).run(model_step=wrong_tool, num_episodes=1)
    assert (crashed.num_collected, crashed.num_failed, crashed.avg_reward) == (0, 1, 0.0)
    assert factory.clients[-1].closed == 1
