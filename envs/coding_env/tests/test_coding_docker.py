"""The coding env image on a real Docker engine: an episode runs in it, and inside the
container (rlimits level, per-session uids) the hidden tests stay unreadable.

Skips only when no Docker engine answers; a failed build fails the test.
"""

from __future__ import annotations

import json
import os

import pytest
from _coding_fixtures import ENV_DIR, PROBLEMS
from coding_env import MODELS, CodeAction

from openenv import EnvClient
from openenv._exceptions import ProviderError

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(600)]

LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"
IMAGE_DATA = "/opt/venv/lib/python3.11/site-packages/coding_env/data/problems.jsonl"


@pytest.fixture(scope="module")
def image():
    from openenv.containers._build import build_env_image
    from openenv.containers._docker import docker_client

    try:
        client = docker_client()
    except ProviderError as exc:
        pytest.skip(str(exc))
    base = os.environ.get("OPENENV_BASE_IMAGE")
    if base is None:
        try:
            client.images.get(LOCAL_BASE_IMAGE)
            base = LOCAL_BASE_IMAGE
        except Exception:
            base = "python:3.11-slim"
    lines: list[str] = []
    try:
        return build_env_image(ENV_DIR, base_image=base, client=client, progress=lines.append)
    except ProviderError as exc:
        pytest.fail(f"building the coding image on {base} failed: {exc}\n" + "\n".join(lines[-30:]))
    finally:
        client.close()


def test_an_episode_runs_in_the_image(image):
    rows = map(json.loads, PROBLEMS.read_text().splitlines())
    solution = next(row["solution"] for row in rows if row["id"] == "two_sum")
    options = {"env": {"OPENENV_ENV_KWARGS": json.dumps({"pool_size": 2, "cell_timeout_s": 2, "grace_s": 1})}}
    with EnvClient.from_docker_image(image, MODELS, provider_options=options) as env:
        first = env.reset(task_id="two_sum")
        sandbox = first.observation.metadata["sandbox"]
        assert sandbox["level"] == "rlimits"  # no user namespaces under Docker's seccomp
        assert sandbox["own_uid"] is True  # the server is root, the worker is not
        assert env.step(CodeAction(code="import os\nos.getuid() >= 390000")).observation.result == "True"
        assert env.step(CodeAction(code="x = 21")).observation.exception is None
        assert env.step(CodeAction(code="x * 2")).observation.result == "42"
        peek = env.step(CodeAction(code=f"open({IMAGE_DATA!r}).read()")).observation
        assert peek.exception is not None
        assert peek.exception.type == "PermissionError"
        slow = env.step(CodeAction(code="import time\ntime.sleep(30)")).observation
        assert slow.timed_out is True
        assert slow.state_lost is False
        assert env.step(CodeAction(code="x")).observation.result == "21"
        done = env.step(CodeAction(code=solution, submit=True))
        assert done.reward == 1.0
        assert done.terminated is True
