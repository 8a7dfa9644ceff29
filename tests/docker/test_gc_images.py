"""``gc_images()`` and ``openenv gc --images``: the terminal env's task images
(``openenv-task-*``, label ``openenv.task``) that no container uses go; one a container
uses stays, and so does an image of the same name the project did not build.

Every image here is built by the terminal env's own builder (``ensure_image``) under a
task id of this test's, and only those are collected (``task=`` / ``--task``): other
processes on this engine keep their cached task images.
"""

from __future__ import annotations

import io
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from terminal_env._image import LABEL, ensure_image

from openenv.containers import gc, gc_images
from openenv.containers._docker import LABEL_TASK_IMAGE

from .conftest import REPO, gc_turn


def _exists(client: Any, name: str) -> bool:
    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


@pytest.fixture
def task_image(docker: Any, echo_image: str, tmp_path: Path) -> Iterator[Callable[[], tuple[str, str]]]:
    """``task_image() -> (task_id, tag)``: a task image built as the terminal env builds
    one (a tiny layer on the echo image); whatever is left is removed at teardown."""
    made: list[str] = []

    def build() -> tuple[str, str]:
        task_id = f"gc-test-{uuid.uuid4().hex[:10]}"
        env_dir = tmp_path / task_id / "environment"
        env_dir.mkdir(parents=True)
        (env_dir / "Dockerfile").write_text(f"FROM {echo_image}\nENV OPENENV_GC_TEST={task_id}\n")
        tag = ensure_image(docker, task_id, env_dir, mapping={}, timeout_s=120)
        made.append(tag)
        return task_id, tag

    yield build
    for tag in made:
        if _exists(docker, tag):
            docker.images.remove(tag, force=True)


def test_the_builder_labels_what_gc_images_collects() -> None:
    assert LABEL == LABEL_TASK_IMAGE


def test_unused_task_images_go_and_used_or_foreign_ones_stay(
    docker: Any, echo_image: str, task_image: Callable[[], tuple[str, str]], track: Callable[[Any], Any]
) -> None:
    unused_task, unused = task_image()
    used_task, used = task_image()
    assert unused.startswith("openenv-task-gc-test-")
    track(docker.containers.create(used, ["true"]))  # never started: still a user of the image
    # A same-named image the project did not build (no label): never ours to remove.
    foreign = f"{unused.split(':')[0]}:foreign"
    dockerfile = f"FROM {echo_image}\nENV OPENENV_GC_FOREIGN={uuid.uuid4().hex}\n"
    docker.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=foreign, rm=True, network_mode="none")
    try:
        with gc_turn():
            gc()  # the containers' gc leaves images alone
        assert _exists(docker, unused)
        assert gc_images(task=used_task) == []  # in use
        assert _exists(docker, used)
        assert gc_images(task=unused_task) == [unused]
        assert not _exists(docker, unused)
        assert _exists(docker, foreign)
        assert _exists(docker, used)
    finally:
        docker.images.remove(foreign, force=True)


def test_openenv_gc_images_cli(docker: Any, task_image: Callable[[], tuple[str, str]]) -> None:
    task_id, tag = task_image()
    plain = subprocess.run(
        [sys.executable, "-m", "openenv", "gc"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert plain.returncode == 0, plain.stderr
    assert _exists(docker, tag)  # only with --images
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "gc", "--images", "--task", task_id],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"removed image {tag}" in proc.stdout.splitlines()
    assert "1 task image(s) removed" in proc.stderr
    assert not _exists(docker, tag)
