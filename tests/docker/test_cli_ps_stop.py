"""``openenv ps`` lists the project's containers; ``openenv stop NAME`` stops one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx

from .conftest import REPO, wait_gone


def openenv(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "openenv", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def ps_rows() -> dict[str, list[str]]:
    proc = openenv("ps", timeout=30)
    assert proc.returncode == 0, proc.stderr
    header, *lines = proc.stdout.splitlines()
    assert header.split() == ["NAME", "IMAGE", "URL", "STATUS", "OWNER"]
    return {line.split()[0]: line.split() for line in lines}


def test_ps_lists_a_detached_container_and_stop_removes_only_it(
    docker: Any, echo_image: str, track: Callable[[Any], Any]
) -> None:
    started = []
    for _ in range(2):
        proc = openenv("run", echo_image, "-d", "--start-timeout", "60")
        assert proc.returncode == 0, proc.stderr
        name, url = proc.stdout.split()
        started.append((name, url, track(docker.containers.get(name))))
    (first, first_url, first_c), (second, second_url, _) = started

    rows = ps_rows()
    assert rows[first] == [first, echo_image, first_url, "running", "detached"]
    assert rows[second][2] == second_url

    proc = openenv("stop", first, timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, f"stopped {first}"), proc.stderr
    assert wait_gone(docker, first_c.id)
    assert first not in ps_rows()
    # the other one still serves
    assert httpx.get(f"{second_url}/health", timeout=5).status_code == 200
    assert second in ps_rows()


def test_stop_of_an_unknown_name_fails_with_one_line(docker: Any) -> None:
    proc = openenv("stop", "openenv-no-such-container-xyz", timeout=30)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "openenv stop: no container named 'openenv-no-such-container-xyz'; `openenv ps` lists the project's"
    )


def test_stop_leaves_containers_of_other_projects_alone(docker: Any, echo_image: str) -> None:
    other = docker.containers.run(echo_image, ["sleep", "60"], detach=True, auto_remove=True,
                                  entrypoint=[], name=None)
    try:
        proc = openenv("stop", other.name, timeout=30)
        assert proc.returncode == 1
        assert "is not an openenv container" in proc.stderr
        other.reload()
        assert other.status == "running"
    finally:
        other.remove(force=True)
