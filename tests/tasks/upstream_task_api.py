"""Run by upstream's interpreter (``.venv-upstream/bin/python``), never by pytest.

Serves the same JSONL task folder from upstream OpenEnv 0.10's own ``create_app`` (its
Task API routes over a ``TaskProvider`` env), sends the requests given as JSON in
argv[2] through FastAPI's in-process ``TestClient``, and prints ``[[status, body], ...]``.
Exit status 5: upstream's ``openenv.core`` cannot be imported.
"""

import json
import os
import sys
from pathlib import Path

# Our package is also named ``openenv``: never let a checkout shadow upstream's.
sys.path[:] = [
    p for p in sys.path if "site-packages" in p or not os.path.isdir(os.path.join(p or ".", "openenv"))
]

try:
    from fastapi.testclient import TestClient

    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as exc:
    print(f"upstream openenv not importable: {exc}", file=sys.stderr)
    sys.exit(5)

FOLDER = Path(sys.argv[1])
SPLITS = {
    p.stem: [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    for p in sorted(FOLDER.glob("*.jsonl"))
}


def task(split, index):
    return {"id": SPLITS[split][index]["id"], "split": split, "index": index, "data": SPLITS[split][index]}


class QuizAction(Action):
    answer: int = 0


class QuizEnv(Environment):
    def reset(self, seed=None, episode_id=None, **kwargs):
        return Observation()

    def step(self, action, timeout_s=None, **kwargs):
        return Observation(done=True)

    @property
    def state(self):
        return State()

    def list_splits(self):
        return list(SPLITS)

    def list_tasks(self, split):
        return [task(split, i) for i in range(len(SPLITS[split]))]

    def num_tasks(self, split):
        return len(SPLITS[split])

    def get_task(self, split, index):
        if not 0 <= index < len(SPLITS[split]):
            raise IndexError(index)
        return task(split, index)

    def get_task_range(self, split, start=None, stop=None):
        return [task(split, i) for i in range(len(SPLITS[split]))[start:stop]]


client = TestClient(create_app(QuizEnv, QuizAction, Observation, env_name="QuizEnv"))
out = []
for method, path, body in json.loads(sys.argv[2]):
    r = client.get(path) if method == "GET" else client.post(path, json=body)
    out.append([r.status_code, r.json()])
print(json.dumps(out))
