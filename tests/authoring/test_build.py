"""On a real Docker engine: ``init`` -> ``build`` -> run -> ``validate`` by URL, and
``from_hub(use_docker=True)`` building a pushed Space's image (fake Hub, a TEST DOUBLE).

Skips only when no Docker engine answers (the reason says why). The base image is
``OPENENV_BASE_IMAGE``, else the offline ``openenv-local/python:3.11-bookworm`` when
present, else ``python:3.11-slim``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv import EnvClient
from openenv._exceptions import ProviderError
from openenv.authoring import init_env, validate_url

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"
#: this run's own names: two suites at once on one engine each build, run and remove theirs
RUN = uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    from openenv.containers._docker import docker_client

    try:
        client = docker_client()
    except ProviderError as exc:
        pytest.skip(f"needs a Docker engine: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="module")
def base_image(engine: Any) -> str:
    import docker.errors

    if os.environ.get("OPENENV_BASE_IMAGE"):
        return os.environ["OPENENV_BASE_IMAGE"]
    try:
        engine.images.get(LOCAL_BASE_IMAGE)
        return LOCAL_BASE_IMAGE
    except docker.errors.ImageNotFound:
        return "python:3.11-slim"


@pytest.fixture
def remove_images(engine: Any) -> Iterator[list[str]]:
    tags: list[str] = []
    yield tags
    for tag in tags:
        with contextlib.suppress(Exception):
            engine.images.remove(tag, force=True)


def test_init_build_run_validate(tmp_path: Path, base_image: str, remove_images: list[str]):
    from openenv.containers import DockerProvider

    folder = init_env("tiles", tmp_path)
    tag = f"openenv-tiles-test-{RUN}"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "openenv",
            "build",
            str(folder),
            "--base-image",
            base_image,
            "-t",
            tag,
        ],
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == tag
    remove_images.append(tag)
    replica = DockerProvider(tag).start()
    try:
        report = validate_url(replica.base_url, deterministic=True)
    finally:
        replica.stop()
    assert report.ok, report.render()
    assert report.get("determinism").outcome.value == "pass"


def test_from_hub_builds_and_runs_the_space_image(tmp_path: Path, base_image: str, remove_images: list[str]):
    from openenv.hub import push
    from openenv.hub._from_hub import image_tag
    from tests.hub.fake_hub import FakeHub

    folder = init_env("lights", tmp_path)
    repo = f"alice/lights-{RUN}"  # the image's tag is named after the repo: this run's own
    hub = FakeHub().start()
    try:
        push(folder, repo, private=True, token=hub.token, endpoint=hub.url)
        remove_images.append(image_tag(repo))
        sys.path.insert(0, str(folder))
        try:
            from lights import MODELS, LightsAction
        finally:
            sys.path.remove(str(folder))
        with EnvClient.from_hub(
            repo,
            MODELS,
            use_docker=True,
            trust_remote_code=True,
            base_image=base_image,
            token=hub.token,
            endpoint=hub.url,
        ) as env:
            env.reset(seed=3)
            result = env.step(LightsAction(guess=4))
            assert result.observation.attempts == 1
            assert result.observation.hint in ("higher", "lower", "correct")
    finally:
        hub.stop()
