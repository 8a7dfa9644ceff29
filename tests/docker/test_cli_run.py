"""``openenv run``: ``-d`` prints a URL and leaves the container serving; without
``-d`` it serves until SIGTERM and then removes the container."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from openenv.containers import gc

from .conftest import OWNER, REPO, container_for_url, gc_turn, wait_gone

URL_PREFIX = "http://127.0.0.1:"


def openenv(*args: str) -> list[str]:
    return [sys.executable, "-m", "openenv", *args]


def test_run_detached_prints_a_url_that_serves_health(
    docker: Any, echo_image: str, track: Callable[[Any], Any]
) -> None:
    proc = subprocess.run(
        openenv("run", echo_image, "-d", "--start-timeout", "60"),
        capture_output=True,
        text=True,
        timeout=90,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    name, url = proc.stdout.strip().split()  # one line: the container's name and URL
    assert url.startswith(URL_PREFIX), proc.stdout
    container = track(container_for_url(docker, url))  # removed at teardown whatever happens
    assert container.name == name
    assert f"openenv stop {name}" in proc.stderr

    # The CLI process has exited; its container must still serve.
    assert httpx.get(f"{url}/health", timeout=5).json() == {"status": "healthy"}
    # It has no live owner, but it is not a crashed client's orphan either.
    assert container.labels[OWNER] == "detached"
    with gc_turn():
        assert container.name not in gc()
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200

    container.remove(force=True)
    assert wait_gone(docker, container.id)


def test_run_in_the_foreground_stops_its_container_on_sigterm(docker: Any, echo_image: str) -> None:
    proc = subprocess.Popen(
        openenv("run", echo_image, "--start-timeout", "60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    container = None
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()  # printed once healthy; bounded by the timeout marker
        name, _, url = line.partition(" ")
        assert url.startswith(URL_PREFIX), (line, proc.poll())
        container = container_for_url(docker, url)
        assert container.name == name
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert wait_gone(docker, container.id), "openenv run left its container after SIGTERM"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if container is not None:
            from .conftest import force_remove

            force_remove(docker, container.id)


def test_run_of_a_missing_image_fails_with_a_message(docker: Any) -> None:
    t0 = time.monotonic()
    proc = subprocess.run(
        openenv("run", "openenv-test-no-such-image:never", "-d", "--start-timeout", "5"),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert proc.returncode == 2  # bad input: no such image here (and none to pull)
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("openenv run: ")
    assert "openenv-test-no-such-image" in proc.stderr
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("bad", ["OPENENV_PORT=notanumber"])
def test_run_of_a_crashing_server_shows_its_logs(docker: Any, echo_image: str, bad: str) -> None:
    proc = subprocess.run(
        openenv("run", echo_image, "-d", "-e", bad, "--start-timeout", "60"),
        capture_output=True,
        text=True,
        timeout=90,
        cwd=REPO,
    )
    assert proc.returncode == 1
    assert "exited before it became healthy" in proc.stderr
    assert "is not a valid int" in proc.stderr
