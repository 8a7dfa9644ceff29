"""The terminal env's Docker image (``openenv build envs/terminal_env``), built at most
once per test run, by whichever test needs it first: tests/harness/test_served_route.py
(which sorts first in a full run) or envs/terminal_env/tests/test_terminal_docker.py.

Skipped only when no Docker engine answers (the reason says so); a failed build fails.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenv._exceptions import ProviderError

ENV_DIR = Path(__file__).resolve().parents[1] / "envs" / "terminal_env"
LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"


@functools.cache
def terminal_image() -> str:
    """The image's tag, built (docker's layer cache makes a rebuild of an unchanged tree
    quick) on the local base when the host has it, with this tree's openenv inside."""
    from openenv.containers import build_env_image
    from openenv.containers._docker import docker_client

    try:
        client = docker_client()
    except ProviderError as exc:
        pytest.skip(f"the terminal image needs a Docker engine: {exc}")
    base = os.environ.get("OPENENV_BASE_IMAGE") or (
        LOCAL_BASE_IMAGE if client.images.list(name=LOCAL_BASE_IMAGE) else "python:3.11-slim"
    )
    lines: list[str] = []
    try:
        tag = build_env_image(ENV_DIR, base_image=base, client=client, progress=lines.append)
        if _digest_in(client, tag) != local_digest():  # the shared base has an older openenv
            tag = build_env_image(
                ENV_DIR, base_image=base, client=client, progress=lines.append, rebuild_base=True
            )
    except ProviderError as exc:
        pytest.fail(f"building the terminal image on {base} failed: {exc}\n" + "\n".join(lines[-30:]))
    finally:
        client.close()
    return str(tag)  # (not compared again: this tree may have changed meanwhile)


#: A digest of the openenv package's sources: the base image is reused by tag alone, so
#: compare what it holds with this tree's and rebuild it when they differ.
DIGEST_CODE = (
    "import hashlib, pathlib, openenv\n"
    "root = pathlib.Path(openenv.__file__).parent\n"
    "h = hashlib.sha256()\n"
    "for p in sorted(root.rglob('*.py')):\n"
    "    h.update(str(p.relative_to(root)).encode() + p.read_bytes())\n"
    "print(h.hexdigest())\n"
)


def local_digest() -> str:
    done = subprocess.run([sys.executable, "-c", DIGEST_CODE], capture_output=True, text=True, timeout=60)
    return done.stdout.strip()


def _digest_in(client: Any, tag: str) -> str:
    import docker.errors

    try:
        out = client.containers.run(tag, ["python3", "-c", DIGEST_CODE], remove=True, network_mode="none")
    except docker.errors.ContainerError:
        return ""
    return bytes(out).decode().strip()
