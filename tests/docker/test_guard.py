"""What ``DockerProvider`` gives every container on a real engine, whatever the image:
Docker's init as PID 1 (orphans are reaped: zombies would pile up and hold sandbox
uids), and a server that answers only loopback names and addresses in ``Host`` (it
binds 0.0.0.0 in there, where any name would pass), so a DNS-rebinding page's name
gets 403 while the published 127.0.0.1 URL works."""

from __future__ import annotations

import io
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from echo_env import MODELS, EchoAction

from openenv import EnvClient
from openenv.containers import DockerProvider

from .conftest import container_for_url


@pytest.fixture
def bare_pid1_image(docker: Any, echo_image: str) -> Iterator[str]:
    """The echo image with no entrypoint: PID 1 is the server itself, which reaps no
    orphans (an image not built on our base, whose dumb-init would)."""
    tag = f"openenv-test-bare-pid1:{uuid.uuid4().hex[:8]}"
    dockerfile = f'FROM {echo_image}\nENTRYPOINT []\nCMD ["openenv", "serve", "echo"]\n'
    docker.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, network_mode="none")
    try:
        yield tag
    finally:
        docker.images.remove(tag, force=True)


def _zombies(container: Any) -> list[str]:
    """The container's zombie processes (``pid (comm)``), read from its /proc."""
    code, out = container.exec_run(["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null"])
    assert code == 0, out
    zombies = []
    for line in out.decode().splitlines():
        head, _, rest = line.rpartition(")")
        if rest.split()[:1] == ["Z"]:
            zombies.append(f"{head})")
    return zombies


def test_an_orphan_in_a_provider_container_is_reaped(docker: Any, bare_pid1_image: str) -> None:
    replica = DockerProvider(bare_pid1_image, client=docker).start()
    try:
        container = container_for_url(docker, replica.base_url)
        code, pid1 = container.exec_run(["cat", "/proc/1/comm"])
        assert pid1.decode().strip() == "docker-init"
        # Three orphans: their shell exits at once, they end 0.2 s later with no parent
        # but PID 1 to wait for them.
        code, out = container.exec_run(["sh", "-c", "for i in 1 2 3; do sleep 0.2 & done; exit 0"])
        assert code == 0, out
        deadline = time.monotonic() + 10
        zombies = _zombies(container)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            zombies = _zombies(container)
            if not zombies:
                break
        assert zombies == []
        with EnvClient(replica.base_url, MODELS) as env:  # the server itself is fine
            env.reset()
            assert env.step(EchoAction(message="hi")).observation.echoed_message == "hi"
    finally:
        replica.stop()


def test_a_provider_container_refuses_a_rebound_host(docker: Any, echo_image: str) -> None:
    replica = DockerProvider(echo_image, client=docker).start()
    try:
        container_for_url(docker, replica.base_url)  # a managed container, published on 127.0.0.1
        with httpx.Client(base_url=replica.base_url, timeout=10) as http:
            evil = http.get("/health", headers={"Host": "evil.example"})
            assert evil.status_code == 403, evil.text
            assert "evil.example" in evil.json()["error"]["message"]
            port = replica.base_url.rsplit(":", 1)[1]
            for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                assert http.get("/health", headers={"Host": host}).status_code == 200
        with EnvClient(replica.base_url, MODELS) as env:
            env.reset()
            assert env.step(EchoAction(message="hi")).observation.echoed_message == "hi"
    finally:
        replica.stop()


def test_a_provider_containers_allowed_hosts_can_be_given(docker: Any, echo_image: str) -> None:
    """``env`` names the server's own (a name a proxy in front of it uses)."""
    provider = DockerProvider(echo_image, client=docker, env={"OPENENV_ALLOWED_HOSTS": "envs.example"})
    replica = provider.start()
    try:
        container_for_url(docker, replica.base_url)  # a managed container, published on 127.0.0.1
        with httpx.Client(base_url=replica.base_url, timeout=10) as http:
            assert http.get("/health", headers={"Host": "envs.example"}).status_code == 200
            assert http.get("/health", headers={"Host": "evil.example"}).status_code == 403
    finally:
        replica.stop()
