"""A local checkpoint's context: a prompt longer than the model takes (with room for
``max_tokens``) is cut from the left for sampling, and the turn, the trajectory, the
results, the report and the command's last line say so; the episode is played, never
an error (it was ``ValueError: sequence of N tokens is longer than the model's max_len``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")

from openenv.eval import load_trajectories
from openenv.eval._cli import main as eval_main
from openenv.policy import LocalModel

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def tiny() -> LocalModel:
    return LocalModel("tiny", seed=0)


def test_a_context_that_fits_is_left_as_it_is(tiny: LocalModel) -> None:
    assert tiny.context_len == 256
    context = list(range(10, 250))
    assert tiny.fit(context, 16) == (context, 16, None)


def test_a_long_context_keeps_its_last_tokens_with_room_for_max_tokens(tiny: LocalModel) -> None:
    context = list(range(10, 10 + 463))
    window, new, warning = tiny.fit(context, 16)
    assert window == context[-240:]
    assert new == 16
    assert warning is not None
    assert "463 tokens" in warning
    assert "context of 256" in warning
    assert "223 cut from the left" in warning


def test_max_tokens_that_fill_the_context_alone_are_lowered(tiny: LocalModel) -> None:
    window, new, warning = tiny.fit([5, 6, 7], 300)
    assert window == [7]
    assert new == 255
    assert warning is not None
    assert "at most 255 tokens" in warning


def test_an_eval_run_past_the_context_plays_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tiny preset (256 tokens) on the coding env, whose prompts (with the tools) are
    longer: every prompt is cut; the CLI run finishes without an error and ends with one
    warning line."""
    out = tmp_path / "run"
    code = eval_main(
        [
            "run",
            str(ROOT / "envs" / "coding_env"),
            "--policy",
            "local:tiny?max_tokens=4",
            "--count",
            "2",
            "--max-turns",
            "1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    trajectories = load_trajectories(out)
    assert len(trajectories) == 2
    turns = [turn for t in trajectories for turn in t.turns]
    assert all(t.status != "error" and t.error is None for t in trajectories)
    assert len(turns) == 2
    for turn in turns:
        [warning] = turn.warnings
        assert "exceed the model's context of 256 tokens" in warning
        assert turn.token_ids
        assert len(turn.token_ids) == len(turn.logprobs or []) <= 4
    assert all(t.warnings == len(t.turns) for t in trajectories)
    assert all(t.prompt_tokens == 252 for t in trajectories)  # 256 - 4
    results = json.loads((out / "results.json").read_text())
    assert results["warnings"] == 2
    [line] = [x for x in captured.err.splitlines() if x.startswith("openenv eval: warning:")]
    assert line.startswith(f"openenv eval: warning: 2 turns have a warning in {out}/trajectories.jsonl")
    assert turns[0].warnings[0] in line

    assert eval_main(["report", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert "exceed the model's context of 256 tokens" in page  # the turn's warning, in the browser's data
