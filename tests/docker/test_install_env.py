"""The base image's ``openenv-install-env``, which every env Dockerfile calls, when the
context is not one ``openenv build`` made: a plain ``docker build`` of an env folder (no
wheels) and a context without the ``.deb`` files ``--apt`` names each stop with one line
naming ``openenv build``, and nothing is fetched (the build has no network)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import ECHO_ENV_DIR

ONE_LINE_END = (
    "build the image with `openenv build <env folder>`: it builds the wheels and fetches "
    "the .deb files on the host, and the build itself has no network"
)


def test_a_plain_docker_build_of_an_env_folder_names_openenv_build(docker: Any, echo_image: str) -> None:
    # the echo image is FROM the base, so it has the base's openenv-install-env
    errors, output = [], []
    for chunk in docker.api.build(
        path=str(ECHO_ENV_DIR),
        buildargs={"OPENENV_BASE": echo_image},
        network_mode="none",
        rm=True,
        forcerm=True,
        decode=True,
    ):
        errors += [chunk["error"]] if "error" in chunk else []
        output += [chunk.get("stream", "")]
    text = re.sub(r"\x1b\[[0-9;]*m", "", "".join(output))  # the engine colours a step's stderr
    said = [line for line in text.splitlines() if line.startswith("openenv-install-env:")]
    assert said == [f"openenv-install-env: no wheels in /tmp/ctx or /tmp/ctx/wheels; {ONE_LINE_END}"], output
    assert errors
    assert "openenv-install-env /tmp/ctx" in errors[0]


def test_a_context_without_the_debs_it_asks_for_names_openenv_build(docker: Any, echo_image: str) -> None:
    from docker.errors import ContainerError

    command = ["openenv-install-env", "--apt", "git", "/tmp"]
    with pytest.raises(ContainerError) as failed:
        docker.containers.run(echo_image, command, user="root", network_mode="none", remove=True, stderr=True)
    assert failed.value.exit_status == 1
    assert failed.value.stderr.decode().strip().splitlines() == [
        "openenv-install-env: the Debian package(s) git are not in the image and /tmp/debs has no "
        f".deb files for them; {ONE_LINE_END}"
    ]
