"""``openenv collect`` as upstream OpenEnv 0.10 has it, on a real server: an OpenSpiel-like
game (``legal_actions``, ``action_id``, a ``game_name`` in each action, no reset
options) played by the scripted teacher; losses dropped, then played again by the next
run with a seed of their own, as upstream's resume does; a failed episode printed and
played again; ``--no-resume`` never overwrites an earlier backup. (Upstream's own
``EpisodeRecord`` reading each line: test_collect.py, which pays for upstream's import.)"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from openenv import Action, Environment, Execution, Observation, State
from openenv.cli import main
from openenv.eval import load_trajectories
from openenv.eval._runner import episode_seed
from openenv.server import create_app, serve_in_background

from ._fake_hf import fake_hf_api

FIRST_LEGAL = 7


class MoveAction(Action):
    action_id: int
    game_name: str = "catch"  # upstream's OpenSpiel action carries the game's name


class MoveObservation(Observation):
    legal_actions: list[int] = []
    seed: int | None = None
    reset_kwargs: list[str] = []
    game_name: str = ""


class OneMove(Environment[MoveAction, MoveObservation, State]):
    """One move. The seed decides: ``seed % 3 == 1`` loses (reward -1), else the first
    legal action wins (+1) and any other move scores -5. Seed 5 fails its first step."""

    execution = Execution.INLINE
    failed: set[int] = set()
    lock = threading.Lock()

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> MoveObservation:
        self.seed, self._state = seed or 0, State(episode_id=episode_id)
        given = sorted(k for k, v in kwargs.items() if v)
        return MoveObservation(legal_actions=[FIRST_LEGAL, 3], seed=seed, reset_kwargs=given)

    def step(self, action: MoveAction) -> MoveObservation:
        with self.lock:
            if self.seed == 5 and 5 not in self.failed:
                self.failed.add(5)
                raise RuntimeError("the game crashed")
        reward = -1.0 if self.seed % 3 == 1 else 1.0 if action.action_id == FIRST_LEGAL else -5.0
        return MoveObservation(reward=reward, done=True, game_name=action.game_name)

    def state(self) -> State:
        return self._state


@pytest.fixture
def game_url():
    OneMove.failed = set()
    with serve_in_background(create_app(OneMove)) as server:
        yield server.url


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {r["episode_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_losses_and_failures_are_played_again_by_the_next_run(
    game_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    argv = ["collect", "openspiel:one_move", "--base-url", game_url, "-o", str(out), "-n", "6"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Collected=3 skipped=0 dropped=2 failed=1" in printed  # 1 and 4 lost, 5 failed
    assert "failed ep-000005: " in printed
    assert "the game crashed" in printed
    assert sorted(_records(out)) == ["ep-000000", "ep-000002", "ep-000003"]
    for record in _records(out).values():
        assert record["reward"] == 1.0  # the first legal action, every time
        assert [m["role"] for m in record["messages"]] == ["user", "assistant", "tool"]
        [call] = record["messages"][1]["tool_calls"]
        assert json.loads(call["function"]["arguments"]) == {"action_id": FIRST_LEGAL}
        assert record["messages"][2]["tool_call_id"] == call["id"]
        assert record["tool_trace"][0]["arguments"] == {"action_id": FIRST_LEGAL}
    for t in load_trajectories(out):
        if t.status == "error":  # a failed episode keeps no turns
            assert t.task_id == "ep-000005"
            assert not t.turns
            continue
        assert t.turns[0].observation["reset_kwargs"] == []  # openspiel:GAME resets with nothing
        assert t.turns[0].observation["seed"] == int(t.task_id[3:])  # a first try: its index
        assert t.final_observation is not None
        assert t.final_observation["game_name"] == "one_move"

    assert main(argv) == 0  # 1 and 4 again as their second sample, 5 again as its first
    assert "Collected=2 skipped=3 dropped=1 failed=0" in capsys.readouterr().out
    assert sorted(_records(out)) == [f"ep-{i:06d}" for i in (0, 1, 2, 3, 5)]
    replays = {t.task_id: t for t in load_trajectories(out) if t.sample == 1}
    assert sorted(replays) == ["ep-000001", "ep-000004"]
    for task_id, t in replays.items():  # a seed of its own: the runner's for that pair
        assert t.turns[0].observation["seed"] == episode_seed(0, task_id, 1)
    assert episode_seed(0, "ep-000001", 1) % 3 != 1
    assert episode_seed(0, "ep-000004", 1) % 3 == 1

    assert main(argv) == 0
    assert "Collected=1 skipped=5 dropped=0 failed=0" in capsys.readouterr().out
    assert sorted(_records(out)) == [f"ep-{i:06d}" for i in range(6)]
    played = [t.key for t in load_trajectories(out)]
    assert len(played) == 10
    assert len(set(played)) == 9
    run = json.loads((out / "run.json").read_text())
    assert (run["tasks"], run["samples"]) == ([f"ep-{i:06d}" for i in range(6)], 3)
    assert json.loads((out / "results.json").read_text())["episodes"] == 9  # every pair's last record


def test_no_resume_keeps_every_earlier_backup(
    game_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import UTC, datetime

    from openenv.eval import _collect

    class Frozen(datetime):  # two runs in one second: upstream adds a counter, never overwrites
        @classmethod
        def now(cls, tz: Any = None) -> Frozen:
            return cls(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    monkeypatch.setattr(_collect, "datetime", Frozen)
    out = tmp_path / "c"
    argv = ["collect", "openspiel:one_move", "--base-url", game_url, "-o", str(out)]
    for n in (1, 3, 4):  # 1, 2 and 3 kept (ep-000001 loses)
        assert main([*argv, "-n", str(n), "--no-resume"]) == 0
    printed = capsys.readouterr().out
    assert (
        f"resume=False moved {out / 'results.jsonl'} to {out / 'results.20260102T030405Z.1.bak.jsonl'}"
        in printed
    )
    backups = sorted(p.name for p in out.glob("results.*.bak.jsonl"))
    assert backups == ["results.20260102T030405Z.1.bak.jsonl", "results.20260102T030405Z.bak.jsonl"]
    counts = sorted(len((out / name).read_text().splitlines()) for name in backups)
    assert counts == [1, 2]  # both earlier runs kept
    assert len(_records(out)) == 3
    assert len(list(out.glob("trajectories.*.bak.jsonl"))) == 2


def test_a_resume_with_another_turn_limit_is_refused_before_anything_is_written(
    game_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    argv = ["collect", "openspiel:one_move", "--base-url", game_url, "-o", str(out)]
    assert main([*argv, "-n", "1"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    assert main([*argv, "-n", "2", "--max-turns", "3"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"openenv collect: {out} holds episodes collected with max_turns=9, not 3: "
        "pass --no-resume (the old files are moved aside) or another --output-dir"
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # metadata.json too


def test_push_to_hub_after_the_collection_and_a_failed_push_is_one_line(
    game_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hub = fake_hf_api(monkeypatch)
    out = tmp_path / "c"
    argv = ["collect", "openspiel:one_move", "--base-url", game_url, "-o", str(out), "-n", "1"]
    assert main([*argv, "-H", "me/games", "--private", "--commit-message", "first"]) == 0
    printed = capsys.readouterr().out
    assert "Pushing to Hub: me/games\nDataset at: https://huggingface.co/datasets/me/games\n" in printed
    upload = {"folder_path": str(out), "repo_id": "me/games", "repo_type": "dataset"}
    upload["commit_message"] = "first"
    assert hub.calls == [
        ("create_repo", {"repo_id": "me/games", "repo_type": "dataset", "private": True, "exist_ok": True}),
        ("upload_folder", upload),
    ]
    assert 'path: "results.jsonl"' in (out / "README.md").read_text()  # the dataset card

    monkeypatch.setattr(hub, "fail", "no route to host\n(retried 5 times)")
    assert main([*argv, "-n", "2", "-H", "me/games"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == "openenv collect: pushing to the Hub failed: OSError: no route to host (retried 5 times)"
    assert len(_records(out)) == 1  # ep-000001 lost: dropped; the collection itself stands
