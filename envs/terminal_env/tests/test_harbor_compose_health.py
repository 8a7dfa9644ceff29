"""Compose healthchecks: a service with a ``healthcheck:`` is healthy before the agent's
session starts; one that never gets healthy is a clear error for that reset, its
containers removed; a healthcheck this env cannot read is that task's error alone.

Real Docker with the ``api-count`` test task's service image (built once, cached by
content like every task image); skipped only where no Docker engine answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _harbor_fixtures import compose_refusal, docker_base, owned, sh, task_env, with_compose
from terminal_env._compose_health import duration_s
from terminal_env._harbor import TaskFormatError

from openenv._exceptions import ExecutionError

pytestmark = pytest.mark.timeout(300)

#: The API answers only after 3 s; its check asks it, every 200 ms.
ASK = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/items', timeout=1)"
SLOW_BUT_CHECKED = f"""services:
  main:
    depends_on:
      api: {{condition: service_healthy}}
  api:
    build: ./api
    command: ["sh", "-c", "sleep 3 && exec python3 /srv/server.py"]
    healthcheck:
      test: ["CMD", "python3", "-c", "{ASK}"]
      interval: 200ms
      timeout: 2s
      retries: 60
"""

NEVER_HEALTHY = """services:
  main:
    depends_on: [api]
  api:
    build: ./api
    command: ["python3", "/srv/server.py"]
    healthcheck:
      test: "echo not ready yet >&2; exit 1"
      interval: 100ms
      timeout: 1s
      retries: 2
"""

FETCH = (
    'python3 -c "import urllib.request;'
    " print(urllib.request.urlopen('http://api:8000/items', timeout=5).status)\""
)


def test_durations_read_as_compose_writes_them() -> None:
    assert duration_s("1m30s", "x") == 90.0
    assert duration_s("500ms", "x") == 0.5
    assert duration_s("2h", "x") == 7200.0
    for bad in ("10", "ten s", 10, "1s junk"):
        with pytest.raises(TaskFormatError, match="is not a duration"):
            duration_s(bad, "x")


@pytest.mark.parametrize(
    ("healthcheck", "says"),
    [
        ("{test: ['CMD']}", "healthcheck.test: a list starts with 'CMD' or 'CMD-SHELL' and names a command"),
        ("{test: 'true', interval: 10}", "healthcheck.interval: 10 is not a duration"),
        ("{test: 'true', retries: 0}", "healthcheck.retries: 0 is not a whole number of at least 1"),
        ("{test: 'true', start_interval: soon}", "healthcheck.start_interval: 'soon' is not a duration"),
        ("{test: 'true', shell: sh}", "healthcheck: shell not supported here"),
    ],
)
def test_a_healthcheck_this_env_cannot_read_is_that_tasks_error(
    tmp_path: Path, healthcheck: str, says: str
) -> None:
    compose = f"services:\n  api:\n    build: ./api\n    healthcheck: {healthcheck}\n"
    why = compose_refusal(tmp_path, compose, "bad-health")
    assert says in why, why


@pytest.mark.docker
async def test_a_service_with_a_healthcheck_is_healthy_when_the_session_starts(tmp_path: Path) -> None:
    base = docker_base()
    with_compose(tmp_path, "slow-api", SLOW_BUT_CHECKED)
    async with task_env(tmp_path, base, image_pool_size=0) as env:
        await env.reset(options={"task_id": "slow-api"})
        # the first request, at once: the API started 3 s late, and the reset waited for it
        got = await sh(env, FETCH, timeout_s=20)
        assert got.output.strip().endswith("200"), got.output


@pytest.mark.docker
async def test_a_service_that_never_gets_healthy_fails_that_reset_and_leaves_nothing(tmp_path: Path) -> None:
    base = docker_base()
    with_compose(tmp_path, "sick-api", NEVER_HEALTHY)
    async with task_env(tmp_path, base, image_pool_size=0) as env:
        with pytest.raises(ExecutionError) as caught:
            await env.reset(options={"task_id": "sick-api"})
        message = str(caught.value)
        says = "service 'api' is unhealthy after 2 failed checks (the last check exited 1: not ready yet)"
        assert says in message
        assert "\n" not in message
        assert owned(env.resources.images.owner) == []  # its service and network went at once
