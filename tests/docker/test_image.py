"""The echo image run the way a user would: ``docker run -p 127.0.0.1:P:8000 openenv-echo``.

No openenv labels, no extra environment: the image alone must serve the protocol to
our client and to upstream's, as uid 1000 under dumb-init, with a working
HEALTHCHECK. One container for the module; the health-status test comes last
because Docker's first check runs ``interval`` (10 s) after the start.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from echo_env import MODELS, EchoAction, EchoObservation, EchoState

from openenv import EnvClient
from openenv.containers import wait_healthy

from .conftest import REPO, force_remove, free_port

UPSTREAM_PY = REPO / ".venv-upstream" / "bin" / "python"
DRIVE = REPO / "tests" / "interop" / "upstream_side" / "drive.py"
#: ``_upstream_guard.EXIT_NO_UPSTREAM``: upstream's openenv.core cannot be imported.
EXIT_NO_UPSTREAM = 5


class UserContainer:
    def __init__(self, container: Any, url: str) -> None:
        self.container = container
        self.url = url

    def exec(self, *argv: str) -> str:
        result = self.container.exec_run(list(argv))
        assert result.exit_code == 0, f"{argv} exited {result.exit_code}: {result.output!r}"
        return str(result.output.decode())


@pytest.fixture(scope="module")
def user_container(docker: Any, echo_image: str) -> Iterator[UserContainer]:
    port = free_port()
    container = docker.containers.run(
        echo_image, detach=True, ports={"8000/tcp": ("127.0.0.1", port)}, name=f"openenv-test-user-{port}"
    )
    try:
        url = f"http://127.0.0.1:{port}"

        def alive() -> bool:
            container.reload()
            return bool(container.status in ("created", "running"))

        wait_healthy(
            url,
            timeout_s=60,
            alive=alive,
            logs=lambda: container.logs(tail=50).decode(errors="replace"),
            what="docker run openenv-echo",
        )
        yield UserContainer(container, url)
    finally:
        force_remove(docker, container.id)


def test_health(user_container: UserContainer) -> None:
    r = httpx.get(f"{user_container.url}/health", timeout=5)
    assert r.status_code == 200
    assert r.json() == {"status": "healthy"}


def test_our_sync_client_runs_an_episode(user_container: UserContainer) -> None:
    with EnvClient(user_container.url, MODELS, timeout_s=10) as env:
        first = env.reset(seed=3)
        assert isinstance(first.observation, EchoObservation)
        assert first.observation.echoed_message == "Echo environment ready!"
        for i in range(3):
            result = env.step(EchoAction(message=f"hello-{i}"))
            assert result.observation.echoed_message == f"hello-{i}"
            assert result.observation.message_length == len(f"hello-{i}")
            assert not result.terminated
        state = env.state()
        assert isinstance(state, EchoState)
        assert state.step_count == 3
        assert state.total_chars == 3 * len("hello-0")


def test_upstream_client_runs_an_episode(user_container: UserContainer) -> None:
    if not (UPSTREAM_PY.is_file() and os.access(UPSTREAM_PY, os.X_OK)):
        pytest.skip(
            f"upstream's client is not installed ({UPSTREAM_PY} is missing; scripts/test.sh creates it)"
        )
    plan = [
        {"name": "generic", "kind": "session", "url": user_container.url, "mode": "generic", "steps": 3},
        {"name": "typed", "kind": "session", "url": user_container.url, "mode": "typed", "steps": 2},
    ]
    proc = subprocess.run(
        [str(UPSTREAM_PY), str(DRIVE), "--plan", json.dumps(plan), "--max-seconds", "90"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    if proc.returncode == EXIT_NO_UPSTREAM:
        pytest.skip(f"upstream openenv cannot be imported in .venv-upstream: {proc.stderr.strip()[-500:]}")
    assert proc.stdout.strip(), f"drive.py printed nothing (rc {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ok"], json.dumps(out, indent=1)[:4000]
    for result in out["results"]:
        assert result["closed"], result
        assert result["reset"]["observation"]["echoed_message"] == "Echo environment ready!"
        echoed = [s["observation"]["echoed_message"] for s in result["steps"]]
        assert echoed == [f"hello-{i}" for i in range(len(echoed))], result
        assert result["state"]["step_count"] == len(echoed)


def test_runs_as_uid_1000(user_container: UserContainer) -> None:
    assert user_container.exec("id", "-u").strip() == "1000"
    # Every process in the container, the server included (/proc/<pid> is owned by
    # the process's effective uid), not just what `exec` starts.
    uids = user_container.exec(
        "python3",
        "-c",
        "import os; print(sorted({os.stat('/proc/' + p).st_uid for p in os.listdir('/proc')"
        " if p.isdigit()}))",
    )
    assert json.loads(uids) == [1000]


def test_dumb_init_is_pid_1(user_container: UserContainer) -> None:
    argv = user_container.exec("cat", "/proc/1/cmdline").split("\0")
    assert argv[0].endswith("dumb-init"), argv
    # ...and the server is its child.
    children = user_container.exec("sh", "-c", "cat /proc/1/task/1/children")
    cmdlines = [user_container.exec("cat", f"/proc/{pid}/cmdline") for pid in children.split()]
    assert any("openenv" in c and "serve" in c for c in cmdlines), cmdlines


def test_image_config(docker: Any, echo_image: str) -> None:
    config = docker.images.get(echo_image).attrs["Config"]
    healthcheck = config.get("Healthcheck") or {}
    test = " ".join(healthcheck.get("Test") or [])
    assert "/health" in test, healthcheck
    assert healthcheck.get("Interval")
    assert healthcheck.get("Timeout")
    assert healthcheck.get("Retries")
    assert config["User"] in ("1000", "1000:1000")
    assert "8000/tcp" in (config.get("ExposedPorts") or {})
    assert config["Entrypoint"][0].endswith("dumb-init")
    assert config["Cmd"] == ["openenv", "serve", "echo"]
    # the OCI labels `openenv validate --level static` judges (static.oci_labels)
    from openenv.containers._labels import oci_labels

    labels = oci_labels(REPO / "envs" / "echo_env")
    assert labels["org.opencontainers.image.title"] == "openenv-echo-env"
    assert labels.items() <= (config.get("Labels") or {}).items(), config.get("Labels")


def test_healthcheck_reports_healthy(user_container: UserContainer) -> None:
    """Docker's own HEALTHCHECK runs inside the image and passes (first run ~10 s in)."""
    deadline = time.monotonic() + 40
    while True:
        user_container.container.reload()
        health = user_container.container.attrs["State"].get("Health") or {}
        if health.get("Status") == "healthy":
            break
        assert health.get("Status") in ("starting", None), health
        assert time.monotonic() < deadline, f"not healthy after 40 s: {health}"
        time.sleep(0.5)
    assert health["Log"][-1]["ExitCode"] == 0
