"""``openenv eval IMAGE``: the env's Docker image run for the run, and stopped after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv.eval import EvalConfig, run_eval

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def echo_image() -> str:
    from openenv._exceptions import ProviderError
    from openenv.containers import build_env_image
    from openenv.containers._docker import docker_client

    from ..docker.conftest import base_image

    try:
        client = docker_client()
    except ProviderError as exc:
        pytest.skip(f"needs a Docker engine: {exc}")
    try:
        return str(build_env_image(ROOT / "envs" / "echo_env", base_image=base_image(client), client=client))
    finally:
        client.close()


def _ours() -> list[str]:
    """This process's containers (``openenv.owner`` = host:pid)."""
    import docker
    from openenv.containers._docker import _owner

    client = docker.from_env()
    try:
        return [
            c.name
            for c in client.containers.list(
                all=True, filters={"label": f"openenv.owner={_owner()}"}, ignore_removed=True
            )
        ]
    finally:
        client.close()


def test_an_env_by_image(tmp_path: Path, echo_image: str) -> None:
    during: list[list[str]] = []
    results = run_eval(
        EvalConfig(
            env=echo_image,
            policy="python:tests.eval._policies:ten_chars",
            out=tmp_path,
            count=2,
            samples=2,
            max_turns=2,
        ),
        on_trajectory=lambda t: during.append(_ours()) if not during else None,
    )
    assert results["env"] == "echo_env"
    assert results["episodes"] == 4
    assert results["errors"] == 0
    assert len(during[0]) == 1  # one container served the run
    assert _ours() == []  # and went with it
