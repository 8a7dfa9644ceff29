"""``EpisodeRecord`` and ``RolloutSerializer``: episodes to ``results.jsonl`` and back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv.core.harness import HarnessRunLimits, MCPHarnessAdapter
from openenv.core.harness.collect import RESULTS_FILENAME, EpisodeRecord, RolloutSerializer

from .._game import GameClient, game_session, guesses


def _record(episode_id: str = "ep-000000", secret: int = 2) -> EpisodeRecord:
    session = game_session(GameClient(secret=secret))
    rollout = MCPHarnessAdapter().run_white_box(guesses(1, 2), session, HarnessRunLimits(max_turns=3))
    return EpisodeRecord.from_rollout(
        episode_id, rollout, session.verify(rollout.messages), task={"level": 1}
    )


def test_a_record_from_a_rollout() -> None:
    record = _record()
    assert (record.reward, record.done, record.task, record.extra) == (1.0, True, {"level": 1}, {})
    assert [m["role"] for m in record.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert record.tool_trace[1] == {
        "tool_name": "guess",
        "arguments": {"n": 2},
        "result": record.tool_trace[1]["result"],
    }
    assert record.tool_trace[1]["result"]["metadata"]["reward"] == 1.0
    assert record.metrics == {"turns": 2, "tool_calls": 2}
    assert record.verify_metrics == {"step_count": 2}
    # what JSON cannot hold is written as its text
    record.extra = {"where": Path("/data/x")}
    assert record.to_dict()["extra"] == {"where": "/data/x"}


def test_records_round_trip_through_the_file(tmp_path: Path) -> None:
    serializer = RolloutSerializer(tmp_path / "out")
    first, second = _record("a-000000"), _record("a-000001", secret=1)
    serializer.write_episode(first)
    serializer.write_episode(second)
    lines = serializer.results_path.read_text().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0])["episode_id"] == "a-000000"
    assert serializer.read_episodes() == [
        EpisodeRecord.from_dict(first.to_dict()),
        EpisodeRecord.from_dict(second.to_dict()),
    ]
    assert serializer.read_episodes()[0].to_dict() == first.to_dict()
    assert serializer.collected_episode_ids() == {"a-000000", "a-000001"}


def test_an_empty_or_missing_file_holds_no_episodes(tmp_path: Path) -> None:
    serializer = RolloutSerializer(tmp_path)
    assert serializer.collected_episode_ids() == set()
    serializer.results_path.write_text("\n\n")
    assert serializer.read_episodes() == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"{not json", "invalid JSON"),
        (b"[1]", "string episode_id"),
        (b'{"episode_id": 3}', "string episode_id"),
        (b"\xff\xfe", "invalid UTF-8"),
    ],
)
def test_a_bad_line_is_reported_with_its_place(tmp_path: Path, line: bytes, problem: str) -> None:
    serializer = RolloutSerializer(tmp_path)
    serializer.results_path.write_bytes(b'{"episode_id": "x"}\n' + line + b"\n")
    with pytest.raises(ValueError, match=f"{RESULTS_FILENAME}:2: .*{problem}"):
        serializer.collected_episode_ids()


def test_appending_after_a_last_line_without_newline(tmp_path: Path) -> None:
    serializer = RolloutSerializer(tmp_path)
    serializer.results_path.write_text('{"episode_id": "old"}')
    serializer.write_episode(_record("new"))
    assert serializer.collected_episode_ids() == {"old", "new"}
    serializer.results_path.write_text('{"episode_id": "old"}\n{"episode_id": "cut')
    with pytest.raises(ValueError, match="last line"):
        serializer.write_episode(_record("newer"))


def test_metadata_beside_the_results(tmp_path: Path) -> None:
    serializer = RolloutSerializer(tmp_path / "run")
    serializer.write_metadata({"model": "m", "path": tmp_path})
    assert json.loads(serializer.metadata_path.read_text()) == {"model": "m", "path": str(tmp_path)}
    assert serializer.output_dir == tmp_path / "run"
