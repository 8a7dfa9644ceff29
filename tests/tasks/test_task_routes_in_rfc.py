"""Every Task API route the server registers is in RFC 0001's Task API table."""

from __future__ import annotations

import re
from pathlib import Path

from openenv.server._tasks import task_routes
from openenv.tasks import TaskSet

from ._quiz import quiz_env

RFC = (Path(__file__).parents[2] / "rfcs" / "0001-env-protocol.md").read_text()


def test_task_routes_are_documented(tmp_path):
    routes = task_routes(quiz_env(TaskSet(tmp_path)))  # routes are built without loading the data
    assert len(routes) == 6
    for route in routes:
        for method in route.methods - {"HEAD"}:
            assert re.search(rf"\| {method} \| `{re.escape(route.path)}` \|", RFC), f"{method} {route.path}"
