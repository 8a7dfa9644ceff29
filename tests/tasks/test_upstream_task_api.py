"""Our Task API answers as upstream OpenEnv 0.10's own server does, for the same tasks.

Upstream's ``create_app`` serves the same folder (``upstream_task_api.py``, run by
``.venv-upstream/bin/python``); every request gets the same status and body from both
(error bodies: the same status and ``detail``; ours adds an ``error`` object).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from openenv.tasks import TaskSet

from ._quiz import quiz_env, write_folder

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_PY = REPO / ".venv-upstream" / "bin" / "python"
SCRIPT = Path(__file__).with_name("upstream_task_api.py")

REQUESTS = [
    ["GET", "/list_environments", None],
    ["GET", "/QuizEnv/splits", None],
    ["GET", "/quizenv/splits", None],
    ["POST", "/QuizEnv/tasks", {"split": "test"}],
    ["POST", "/QuizEnv/num_tasks", {"split": "train"}],
    ["POST", "/QuizEnv/task", {"split": "train", "index": 3}],
    ["POST", "/QuizEnv/task", {"split": "train", "index": 99}],
    ["POST", "/QuizEnv/task_range", {"split": "train", "start": 1, "stop": 4}],
    ["POST", "/QuizEnv/task_range", {"split": "test"}],
    ["POST", "/QuizEnv/task_range", {"split": "train", "start": -2}],
    ["GET", "/OtherEnv/splits", None],
    ["POST", "/OtherEnv/num_tasks", {"split": "train"}],
]


@pytest.mark.timeout(120)
def test_task_api_matches_upstream(serve, tmp_path):
    if not UPSTREAM_PY.is_file():
        pytest.skip(f"{UPSTREAM_PY} does not exist (scripts/test.sh creates it)")
    folder = write_folder(tmp_path / "quiz", {"train": 6, "test": 3, "validation": 2})
    proc = subprocess.run(
        [str(UPSTREAM_PY), str(SCRIPT), str(folder), json.dumps(REQUESTS)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=110,
    )
    if proc.returncode == 5:
        pytest.skip(f"upstream openenv is not importable: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    upstream = json.loads(proc.stdout.strip().splitlines()[-1])

    server = serve(quiz_env(TaskSet(folder)))
    with httpx.Client(base_url=server.url, timeout=10) as http:
        ours = [
            (r.status_code, r.json())
            for r in (http.get(p) if m == "GET" else http.post(p, json=b) for m, p, b in REQUESTS)
        ]
    for (method, path, body), (status, theirs), (our_status, mine) in zip(
        REQUESTS, upstream, ours, strict=True
    ):
        where = f"{method} {path} {body}"
        assert our_status == status, where
        if status == 200:
            assert mine == theirs, where
        else:
            assert mine["detail"] == theirs["detail"], where
