"""TaskSet over real files read by ``datasets``: formats, splits, picks and errors."""

from __future__ import annotations

import csv
import random
import sys

import pytest

from openenv import ValidationFailed
from openenv.tasks import Task, TaskNotFound, TaskOptions, TaskSet

from ._quiz import rows, write_folder, write_jsonl

pytest.importorskip("datasets", reason="the 'tasks' extra (datasets) is not installed")


@pytest.fixture
def folder(tmp_path):
    return write_folder(tmp_path / "quiz", {"train": 7, "test": 3})


def test_jsonl_file_is_one_train_split(tmp_path):
    ts = TaskSet(write_jsonl(tmp_path / "q.jsonl", rows("x", 4)))
    assert ts.splits == ["train"]
    assert ts.num_tasks() == 4
    assert ts.get(2) == Task(
        id="x-2", split="train", index=2, data={"id": "x-2", "question": "x q2", "answer": 20}
    )


def test_parquet_file(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "q.parquet"
    pq.write_table(pa.Table.from_pylist(rows("p", 5)), path)
    ts = TaskSet(path)
    assert ts.num_tasks("train") == 5
    assert ts.by_id("p-4").data == {"id": "p-4", "question": "p q4", "answer": 40}


def test_csv_file_with_split_mapping_and_another_id_column(tmp_path):
    paths = {}
    for split, n in {"train": 3, "validation": 2}.items():
        paths[split] = tmp_path / f"{split}.csv"
        with paths[split].open("w", newline="") as f:
            w = csv.DictWriter(f, ["name", "question", "answer"])
            w.writeheader()
            w.writerows({"name": f"n{split}{i}", "question": "q", "answer": i} for i in range(n))
    ts = TaskSet({k: str(v) for k, v in paths.items()}, id_column="name")
    assert ts.splits == ["train", "validation"]
    assert ts.by_id("nvalidation1") == Task(
        "nvalidation1", "validation", 1, {"name": "nvalidation1", "question": "q", "answer": 1}
    )


def test_folder_splits_from_file_names(folder):
    ts = TaskSet(folder)
    assert ts.splits == ["test", "train"]  # one split per file, sorted by name
    assert ts.default_split == "train"
    assert (ts.num_tasks("train"), ts.num_tasks("test")) == (7, 3)
    assert [t.id for t in ts.range("test")] == ["test-0", "test-1", "test-2"]
    assert [t.index for t in ts.range("train", 2, 5)] == [2, 3, 4]
    assert [t.index for t in ts.range("train", -2)] == [5, 6]
    assert ts.range("train", 5, 2) == []


def test_without_an_id_column_ids_are_split_and_index(tmp_path):
    ts = TaskSet(write_jsonl(tmp_path / "q.jsonl", [{"q": i} for i in range(3)]))
    assert ts.get(1).id == "train-1"
    assert ts.by_id("train-2").data == {"q": 2}


def test_pick_by_id_then_index_then_seed(folder):
    ts = TaskSet(folder)
    assert ts.pick({"task_id": "test-2"}).index == 2
    assert ts.pick({"task_id": "train-1", "index": 5}).id == "train-1"  # id wins
    assert ts.pick(TaskOptions(split="test", index=1)).id == "test-1"
    assert ts.pick({"index": 6}).id == "train-6"
    # the seed picks deterministically, and the same way in every process
    expected = random.Random(12345).randrange(7)
    assert ts.pick(seed=12345).index == expected
    assert [ts.pick(seed=s).id for s in range(20)] == [TaskSet(folder).pick(seed=s).id for s in range(20)]
    assert len({ts.pick(seed=s).index for s in range(50)}) > 3
    assert ts.pick({"split": "test"}, seed=4).split == "test"


def test_pick_without_seed_walks_a_cursor(folder):
    ts = TaskSet(folder)
    assert [ts.pick({"split": "test"}).index for _ in range(4)] == [0, 1, 2, 0]


def test_unknown_split_id_and_index_are_typed(folder):
    ts = TaskSet(folder)
    with pytest.raises(TaskNotFound) as err:
        ts.pick({"split": "dev"})
    assert err.value.details["split"] == "dev"
    assert err.value.http_status == 404
    assert err.value.to_wire()["code"] == "TASK_NOT_FOUND"
    with pytest.raises(TaskNotFound, match="no task with id 'nope'"):
        ts.pick({"task_id": "nope"})
    with pytest.raises(TaskNotFound, match="in split 'test'"):
        ts.pick({"task_id": "train-1", "split": "test"})
    with pytest.raises(TaskNotFound) as err:
        ts.pick({"split": "test", "index": 3})
    assert err.value.details == {"split": "test", "index": 3}
    with pytest.raises(ValidationFailed):
        ts.pick({"index": -1})


@pytest.mark.parametrize("index", [True, "1", 1.5])
def test_task_options_index_is_a_json_integer(index):
    with pytest.raises(ValueError, match="index"):
        TaskOptions.model_validate({"index": index})
    assert TaskOptions.model_validate({"index": 1.0}).index == 1
    assert TaskOptions.model_json_schema()["properties"]["index"]["anyOf"][0]["minimum"] == 0


def test_loaded_once_and_lazily(folder, monkeypatch):
    import datasets

    calls = []
    real = datasets.load_dataset
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: calls.append(a) or real(*a, **k))
    ts = TaskSet(folder)
    assert not ts.loaded
    assert calls == []
    for seed in range(5):
        ts.pick(seed=seed)
    ts.load()
    assert ts.loaded
    assert len(calls) == 1


def test_in_memory_dataset_and_bad_suffix(tmp_path):
    import datasets

    ts = TaskSet(datasets.DatasetDict({"eval": datasets.Dataset.from_list(rows("e", 2))}))
    assert ts.splits == ["eval"]
    assert ts.default_split == "eval"
    bad = tmp_path / "q.txt"
    bad.write_text("x")
    with pytest.raises(ValueError, match="cannot tell the format"):
        TaskSet(bad).load()


def test_missing_datasets_names_the_extra(folder, monkeypatch):
    from openenv._extras import MissingExtra

    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    with pytest.raises(MissingExtra, match=r"needs the 'tasks' extra.*pip install 'openenv\[tasks\]'"):
        TaskSet(folder).load()
