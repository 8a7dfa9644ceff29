"""The dataset card of a collect folder, and ``push_to_hf_hub`` (against a stand-in ``HfApi``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openenv.core.harness.collect import (
    README_FILENAME,
    EpisodeRecord,
    RolloutSerializer,
    build_dataset_readme,
    push_to_hf_hub,
)


def _folder(tmp_path: Path, episodes: int = 2) -> Path:
    serializer = RolloutSerializer(tmp_path)
    serializer.write_metadata({"env_id": "guess", "model": "m-1"})
    for i in range(episodes):
        serializer.write_episode(EpisodeRecord(f"ep-{i}", [], 1.0, True, [], {}, {}, {}))
    return tmp_path


def test_the_card_names_results_jsonl_and_counts_episodes(tmp_path: Path) -> None:
    card = build_dataset_readme(_folder(tmp_path))
    front, _, body = card.removeprefix("---\n").partition("\n---\n")
    assert 'path: "results.jsonl"' in front
    assert "split: train" in front
    assert "**Episodes:** 2" in body
    assert "| `model` | `m-1` |" in body


def test_the_card_of_a_folder_without_metadata(tmp_path: Path) -> None:
    (tmp_path / "metadata.json").write_text("[not an object]")
    card = build_dataset_readme(tmp_path)
    assert "**Episodes:** 0" in card
    assert "Run metadata" not in card


class FakeApi:
    instances: list[FakeApi] = []

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        FakeApi.instances.append(self)

    def create_repo(self, **kwargs: Any) -> None:
        self.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs: Any) -> None:
        self.calls.append(("upload_folder", kwargs))


def test_push_creates_the_dataset_and_uploads_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = pytest.importorskip("huggingface_hub", reason="the 'hub' extra is not installed")
    monkeypatch.setattr(hub, "HfApi", FakeApi)
    folder = _folder(tmp_path)
    url = push_to_hf_hub(folder, "me/guesses", private=True, token="t")
    assert url == "https://huggingface.co/datasets/me/guesses"
    api = FakeApi.instances[-1]
    assert api.token == "t"
    assert api.calls == [
        ("create_repo", {"repo_id": "me/guesses", "repo_type": "dataset", "private": True, "exist_ok": True}),
        (
            "upload_folder",
            {
                "folder_path": str(folder),
                "repo_id": "me/guesses",
                "repo_type": "dataset",
                "commit_message": "Add 2 collected episode(s)",
            },
        ),
    ]
    assert (folder / README_FILENAME).read_text() == build_dataset_readme(folder)


def test_push_needs_results(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"results\.jsonl"):
        push_to_hf_hub(tmp_path, "me/empty")
