"""The served task set as JSON Schema (``openenv/server/_task_schema.py``): what the
document lets a client send is what the server answers, checked value by value with
``jsonschema`` against a real ``TaskSet`` (no server: the schemathesis runs in
``test_schemathesis.py`` send the requests)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from openenv._exceptions import TaskNotFound
from openenv.server._task_schema import MAX_IDS, TaskCatalog, constrain_reset
from openenv.tasks import TaskOptions, TaskSet

from ..tasks._quiz import rows

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("datasets", reason="the 'tasks' extra (datasets) is not installed")

SIZES = {"train": 4, "test": 2, "empty": 0}


@pytest.fixture(scope="module")
def tasks() -> TaskSet:
    from datasets import Dataset, DatasetDict

    splits = {name: Dataset.from_list(rows(name, n)) for name, n in SIZES.items() if n}
    splits["empty"] = Dataset.from_dict({"id": [], "question": [], "answer": []})
    return TaskSet(DatasetDict(splits)).load()


@pytest.fixture(scope="module")
def catalog(tasks: TaskSet) -> TaskCatalog:
    return TaskCatalog.read("Quiz-Env.v2", tasks)


def valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def picks(tasks: TaskSet, options: dict[str, Any]) -> bool:
    try:
        tasks.pick(options, seed=1)
    except TaskNotFound:
        return False
    return True


def test_the_env_name_matches_as_the_server_does(catalog: TaskCatalog) -> None:
    pattern = catalog.env_name_parameter()["pattern"]
    for name in ("Quiz-Env.v2", "quiz-env.V2", "QUIZ-ENV.V2"):
        assert re.match(pattern, name)
    for name in ("Quiz-EnvXv2", "Quiz-Env.v2/", "Quiz-Env", "xQuiz-Env.v2"):
        assert not re.match(pattern, name)


def test_task_body_bounds_each_split(tasks: TaskSet, catalog: TaskCatalog) -> None:
    schema = catalog.task_body()
    for split in [*SIZES, "nope"]:
        for index in range(-2, 7):
            served = split in SIZES and 0 <= index < SIZES[split]
            assert valid(schema, {"split": split, "index": index}) is served, (split, index)
            if served:
                assert tasks.get(index, split).index == index


def test_reset_options_allowed_are_the_ones_that_pick_a_task(tasks: TaskSet, catalog: TaskCatalog) -> None:
    schema = constrain_reset(TaskOptions.model_json_schema(), catalog)
    ids = ["train-0", "train-3", "test-1", "test-9", "nope", None]
    splits = [*SIZES, "nope", None]
    indices = [0, 1, 3, 4, None]
    checked = 0
    for task_id in ids:
        for split in splits:
            for index in indices:
                options = {k: v for k, v in {"task_id": task_id, "split": split, "index": index}.items()
                           if v is not None or k == "split"}
                assert valid(schema, options) is picks(tasks, options), options
                checked += 1
    assert checked == 6 * 5 * 5
    assert valid(schema, {}) is picks(tasks, {})  # the default split, from the seed


def test_a_split_too_large_to_list_takes_any_id(tasks: TaskSet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("openenv.server._task_schema.MAX_IDS", 3)
    catalog = TaskCatalog.read("quiz", tasks)
    assert catalog.ids["train"] is None
    assert catalog.ids["test"] == ["test-0", "test-1"]
    schema = constrain_reset(TaskOptions.model_json_schema(), catalog)
    assert valid(schema, {"task_id": "anything"})
    assert MAX_IDS == 5000  # the module's own bound, unpatched
