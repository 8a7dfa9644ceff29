"""``openenv eval push DIR REPO``: a run folder as a Hub dataset. The Hub cannot be
reached from tests, so ``HfApi`` is a stand-in that keeps what would be uploaded; the
uploaded folder is then read as the Hub's dataset loader reads it (the card's
``data_files``), and its rows equal ``openenv.eval.load_dataset(DIR)``."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import ANY

import pytest

from openenv.eval import EvalConfig, load_dataset, run_eval
from openenv.eval._cli import main

from ._fake_hf import FakeHfApi, fake_hf_api
from ._policies import echo_run

ROOT = Path(__file__).resolve().parents[2]
hub = pytest.importorskip("huggingface_hub", reason="the 'hub' extra brings huggingface_hub")
datasets = pytest.importorskip("datasets", reason="the 'eval' extra brings datasets")


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> type[FakeHfApi]:
    return fake_hf_api(monkeypatch, kept=tmp_path / "uploaded")


def test_push_uploads_the_trajectories_as_a_dataset_the_hub_can_load(
    tmp_path: Path, fake_hub: type[FakeHfApi], capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    echo_run(run, "python:tests.eval._policies:ten_chars", samples=2, count=2, max_turns=2)
    assert main(["report", str(run)]) == 0
    capsys.readouterr()
    assert main(["push", str(run), "me/evals", "--private", "--commit-message", "baseline"]) == 0
    assert capsys.readouterr().out.strip() == "https://huggingface.co/datasets/me/evals"
    assert fake_hub.calls == [
        ("create_repo", {"repo_id": "me/evals", "repo_type": "dataset", "private": True, "exist_ok": True}),
        ("upload_folder", {"folder_path": ANY, "repo_id": "me/evals", "repo_type": "dataset",
                           "commit_message": "baseline"}),
    ]
    up = fake_hub.kept
    assert up is not None
    assert sorted(p.relative_to(up).as_posix() for p in up.rglob("*") if p.is_file()) == [
        "README.md",
        "data/train.parquet",
        "report.html",
        "results.json",
        "run.json",
    ]
    card = (up / "README.md").read_text()
    assert 'path: "data/train.parquet"' in card
    assert "openenv eval: echo_env / ten_chars" in card
    # What the Hub's loader reads for this card: the parquet file as the train split.
    pushed = datasets.load_dataset("parquet", data_files={"train": str(up / "data/train.parquet")})["train"]
    local = load_dataset(run)
    assert pushed.num_rows == local.num_rows == 4
    assert pushed.to_list() == local.to_list()


def test_a_failed_push_is_one_line_and_exit_1(
    tmp_path: Path, fake_hub: type[FakeHfApi], capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run_eval(EvalConfig(env=str(ROOT / "envs" / "echo_env"), policy="null", out=run, count=1))
    fake_hub.fail = "401 Unauthorized\n(invalid token)"
    assert main(["push", str(run), "me/evals"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        "openenv eval: pushing to the Hub failed: OSError: 401 Unauthorized (invalid token)"
    )
    assert captured.out == ""


def test_push_of_a_folder_without_a_run_is_one_line_and_exit_2(
    tmp_path: Path, fake_hub: type[FakeHfApi], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["push", str(tmp_path), "me/evals"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("openenv eval: no trajectories.jsonl in ")
    assert fake_hub.calls == []
