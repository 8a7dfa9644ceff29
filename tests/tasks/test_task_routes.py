"""The Task API routes and task choice at reset, over a real server and both clients."""

from __future__ import annotations

import httpx
import pytest

from openenv import AsyncEnvClient, EnvClient, EnvModels, State
from openenv.tasks import TaskNotFound, TaskSet

from ._quiz import Answer, Question, quiz_env, write_folder

pytest.importorskip("datasets", reason="the 'tasks' extra (datasets) is not installed")

MODELS = EnvModels(Answer, Question, State)


@pytest.fixture
def quiz(serve, tmp_path):
    env = quiz_env(TaskSet(write_folder(tmp_path / "quiz", {"train": 6, "test": 3, "holdout": 2})))
    server = serve(env)
    assert env.task_set.loaded  # loaded at startup, not by the first session
    return server


@pytest.fixture
def http(quiz):
    with httpx.Client(base_url=quiz.url, timeout=10) as client:
        yield client


def test_splits_and_list_environments(http):
    assert http.get("/list_environments").json() == ["QuizEnv"]
    assert http.get("/quizenv/splits").json() == [  # env name matched case-insensitively
        {"name": "holdout", "type": "validation"},
        {"name": "test", "type": "test"},
        {"name": "train", "type": "train"},
    ]
    assert http.get("/OtherEnv/splits").status_code == 404


def test_tasks_num_task_and_range(http):
    body = http.post("/QuizEnv/tasks", json={"split": "test"}).json()
    assert body["env_name"] == "QuizEnv"
    assert [t["id"] for t in body["tasks"]] == ["test-0", "test-1", "test-2"]
    assert body["tasks"][1] == {
        "id": "test-1",
        "split": "test",
        "index": 1,
        "data": {"id": "test-1", "question": "test q1", "answer": 10},
    }
    assert http.post("/QuizEnv/num_tasks", json={"split": "train"}).json() == {"num_tasks": 6}
    assert http.post("/QuizEnv/task", json={"split": "train", "index": 4}).json()["task"]["id"] == "train-4"
    got = http.post("/QuizEnv/task_range", json={"split": "train", "start": 1, "stop": 3}).json()
    assert [t["index"] for t in got["tasks"]] == [1, 2]
    got = http.post("/QuizEnv/task_range", json={"split": "train", "start": 4}).json()
    assert [t["index"] for t in got["tasks"]] == [4, 5]


def test_route_errors_are_typed(http):
    r = http.post("/QuizEnv/num_tasks", json={"split": "dev"})
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "TASK_NOT_FOUND"
    # an empty split is a name no split has, not the default split
    for route in ("num_tasks", "tasks", "task_range"):
        r = http.post(f"/QuizEnv/{route}", json={"split": ""})
        assert (r.status_code, r.json()["error"]["code"]) == (404, "TASK_NOT_FOUND"), route
    r = http.post("/QuizEnv/task", json={"split": "test", "index": 9})
    assert r.status_code == 400  # upstream's answer to an IndexError
    assert r.json()["detail"] == "Invalid task index"
    assert r.json()["error"]["code"] == "TASK_NOT_FOUND"
    r = http.post("/QuizEnv/task", json={"split": "test"})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "VALIDATION_ERROR"


def test_reset_picks_by_options_and_seed_sync_client(quiz):
    with EnvClient(quiz.url, MODELS) as env:
        obs = env.reset(task_id="test-2").observation
        assert (obs.task_id, obs.split, obs.index, obs.question) == ("test-2", "test", 2, "test q2")
        assert env.reset(split="holdout", index=1).observation.task_id == "holdout-1"
        assert env.step(Answer(answer=10)).reward == 1.0
        first = env.reset(seed=7).observation.task_id
        assert all(env.reset(seed=7).observation.task_id == first for _ in range(3))
        with pytest.raises(TaskNotFound) as err:
            env.reset(task_id="nope")
        assert err.value.details["task_id"] == "nope"
        with pytest.raises(TaskNotFound):
            env.reset(split="dev")
        assert env.reset(index=0).observation.task_id == "train-0"  # the connection survived


async def test_reset_picks_and_errors_async_client(quiz):
    async with AsyncEnvClient(quiz.url, MODELS) as env:
        assert (await env.reset(split="test", index=0)).observation.task_id == "test-0"
        with pytest.raises(TaskNotFound):
            await env.reset(split="test", index=3)


def test_http_reset_unknown_task_is_404(http):
    r = http.post("/reset", json={"task_id": "zzz"})
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "TASK_NOT_FOUND"
    assert http.post("/reset", json={"task_id": "train-3"}).json()["observation"]["task_id"] == "train-3"


def test_env_without_task_set_has_no_task_routes(serve):
    server = serve()
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert http.get("/list_environments").status_code == 404


def test_session_reset_naming_no_task_is_400_not_the_sessions_404(http):
    sid = http.post("/sessions").json()["session_id"]
    r = http.post(f"/sessions/{sid}/reset", json={"split": "dev"})
    assert r.status_code == 400  # 404 on a session's path means the session is not there
    assert r.json()["error"]["code"] == "TASK_NOT_FOUND"
    reset = http.post(f"/sessions/{sid}/reset", json={"index": 1}).json()
    assert reset["observation"]["task_id"] == "train-1"  # the session lives on
    doc = http.get("/openapi.json").json()
    answers = doc["paths"]["/sessions/{sid}/reset"]["post"]["responses"]
    assert "TASK_NOT_FOUND" in answers["400"]["description"]
    assert "404" in doc["paths"]["/reset"]["post"]["responses"]  # the stateless route keeps 404


def test_task_routes_document_their_bodies_and_errors(http):
    paths = http.get("/openapi.json").json()["paths"]
    task = paths["/{env_name}/task"]["post"]
    assert task["operationId"] == "post_task"
    assert task["requestBody"]["required"] is True
    assert {"400", "404", "422"} <= set(task["responses"])
    assert paths["/{env_name}/splits"]["get"]["responses"]["404"]
    assert paths["/{env_name}/num_tasks"]["post"]["responses"]["200"]["content"]
    r = http.post("/OtherEnv/num_tasks", json={"split": "train"})
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "NOT_FOUND"  # the error body, as documented


@pytest.mark.parametrize("body", [{"split": "test", "index": True}, {"split": "test", "index": "1"}])
def test_task_index_is_a_json_integer(http, body):
    assert http.post("/QuizEnv/task", json=body).status_code == 422
    assert http.post("/QuizEnv/task", json={"split": "test", "index": 1.0}).json()["task"]["id"] == "test-1"
    assert http.post("/QuizEnv/task", json={"split": "test", "index": -1}).status_code == 400  # as upstream
