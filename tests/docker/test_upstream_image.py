"""``openenv build DIR`` of folders in upstream's layout (tests/core/upstream_envs), with
a real engine: the image serves the folder, unchanged, on our server, as uid 1000, and
the folder's own upstream-style client drives it (the MCP one through fastmcp tools)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from openenv.containers import wait_healthy

from .conftest import REPO, base_image, force_remove, free_port

ENVS = REPO / "tests" / "core" / "upstream_envs"


@pytest.fixture(autouse=True)
def _envs_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ENVS))


def _build(docker: Any, folder: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENENV_BASE_IMAGE"}
    return subprocess.run(
        [sys.executable, "-m", "openenv", "build", str(ENVS / folder), "--base-image", base_image(docker)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )


@contextmanager
def _run(docker: Any, tag: str) -> Iterator[str]:
    port = free_port()
    container = docker.containers.run(tag, detach=True, ports={"8000/tcp": ("127.0.0.1", port)},
                                      name=f"openenv-test-upstream-{port}")
    try:
        url = f"http://127.0.0.1:{port}"

        def alive() -> bool:
            container.reload()
            return bool(container.status in ("created", "running"))

        wait_healthy(url, timeout_s=60, alive=alive, what=f"docker run {tag}",
                     logs=lambda: container.logs(tail=50).decode(errors="replace"))
        yield url
    finally:
        force_remove(docker, container.id)


@pytest.fixture(scope="module")
def counter_url(docker: Any) -> Iterator[str]:
    proc = _build(docker, "counter_env")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "openenv-counter-env"
    assert "an upstream OpenEnv folder" in proc.stderr
    assert docker.images.get("openenv-counter-env").attrs["Config"]["User"] == "1000:1000"
    with _run(docker, "openenv-counter-env") as url:
        yield url


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_counter_folder_image_runs_an_episode(counter_url: str) -> None:
    from counter_env import CounterAction, CounterEnv

    with CounterEnv(base_url=counter_url).sync() as env:
        assert env.reset().observation.total == 0
        env.step(CounterAction(add=4))
        result = env.step(CounterAction(add=5))
        assert result.observation.total == 9
        assert env.state().step_count == 2


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_mcp_tools_folder_image_gets_fastmcp_and_serves_its_tools(docker: Any) -> None:
    from tools_env import ToolsEnv

    proc = _build(docker, "tools_env")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fastmcp" in proc.stderr  # wheeled on the host: upstream's package brought it
    with _run(docker, proc.stdout.strip()) as url, ToolsEnv(base_url=url).sync() as env:
        env.reset()
        assert sorted(t.name for t in env.list_tools()) == ["add", "shout"]
        assert env.call_tool("add", a=2, b=3) == 5
