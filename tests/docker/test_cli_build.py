"""`openenv build` with a real engine: a base image that cannot be pulled is one line
naming --base-image; the browser env (Debian's chromium) builds with the one command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import base_image

ROOT = Path(__file__).resolve().parents[2]


def _openenv(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENENV_BASE_IMAGE"}
    return subprocess.run([sys.executable, "-m", "openenv", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_base_image_without_a_registry_names_base_image(docker: Any) -> None:
    # `.invalid` never resolves (RFC 2606): what a machine with no registry sees
    unreachable = "registry.invalid/python:3.11-slim"
    proc = _openenv("build", "envs/echo_env", "--base-image", unreachable, timeout=120)
    assert (proc.returncode, proc.stdout) == (1, "")
    last = proc.stderr.strip().splitlines()[-1]  # the lines before it are progress
    assert last.startswith("openenv build: cannot get the base image registry.invalid/python:3.11-slim (")
    assert "--base-image openenv-local/python:3.11-bookworm" in last
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_browser_env_builds_with_one_command_and_runs_as_uid_1000(docker: Any) -> None:
    if not Path("/usr/bin/apt-get").exists():
        pytest.skip("the browser image's chromium is fetched by the host's apt-get (a Debian host)")
    proc = _openenv("build", "envs/browser_env", "--base-image", base_image(docker), timeout=840)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "openenv-browser"
    image = docker.images.get("openenv-browser")
    assert image.attrs["Config"]["User"] == "1000:1000"
    assert ".deb files for chromium libatomic1" in proc.stderr
