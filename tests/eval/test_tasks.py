"""Which tasks a run plays on an env with a Task API (the quiz env of tests/tasks, three
splits): the default split (``test``), ``--split``, ``--ids`` in their order, ``--count``,
and every task; each episode is reset onto its own task. An unknown split or id is one
line and exit status 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv.eval import EvalConfig, load_trajectories, run_eval
from openenv.eval._cli import main
from openenv.policy import CallablePolicy
from openenv.tasks import TaskSet

from ..tasks._quiz import quiz_env, write_folder


def _answer(observation: dict[str, Any], episode: Any) -> dict[str, Any]:
    """The quiz's answer (ten times the task's index), and the task the env was reset onto."""
    assert observation["task_id"] == episode.task_id  # reset picked this episode's own task
    return {"answer": observation["index"] * 10}


@pytest.fixture(scope="module")
def quiz(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from openenv.server import create_app, serve_in_background

    folder = write_folder(tmp_path_factory.mktemp("quiz"), {"train": 6, "test": 3, "holdout": 2})
    with serve_in_background(create_app(quiz_env(TaskSet(folder)))) as server:
        yield server.url


def _run(url: str, out: Path, **selection: Any) -> list[tuple[str, str | None]]:
    results = run_eval(EvalConfig(env=url, policy=CallablePolicy(_answer), out=out, **selection))
    assert results["errors"] == 0, results["error_kinds"]
    assert results["pass_at_k"] == {"1": 1.0}
    return [(t.task_id, t.split) for t in sorted(load_trajectories(out), key=lambda t: t.task_id)]


def test_the_default_split_is_test_and_every_task_of_it(quiz: str, tmp_path: Path) -> None:
    assert _run(quiz, tmp_path) == [("test-0", "test"), ("test-1", "test"), ("test-2", "test")]


def test_a_split_ids_and_a_count(quiz: str, tmp_path: Path) -> None:
    assert _run(quiz, tmp_path / "a", split="train") == [(f"train-{i}", "train") for i in range(6)]
    assert _run(quiz, tmp_path / "b", split="holdout", count=1) == [("holdout-0", "holdout")]
    picked = _run(quiz, tmp_path / "c", split="train", ids=["train-4", "train-1", "train-5"], count=2)
    assert picked == [("train-1", "train"), ("train-4", "train")]  # the first two ids given


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--split", "nope"], "QuizEnv has no split 'nope'; its splits: holdout, test, train"),
        (["--ids", "test-9"], "QuizEnv has no task 'test-9' in split 'test'"),
    ],
)
def test_an_unknown_split_or_id_is_one_line_and_exit_2(
    quiz: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    code = main(["run", quiz, "-p", "null", "-o", str(tmp_path / "o"), "--no-progress", *args])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"openenv eval: {said}"
