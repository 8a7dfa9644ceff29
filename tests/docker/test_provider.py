"""``DockerProvider`` and the clients' ``from_docker_image`` against a real engine."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from echo_env import MODELS, EchoAction

from openenv import AsyncEnvClient, EnvClient
from openenv._exceptions import (
    ConnectionClosed,
    OpenEnvError,
    ProviderError,
    RequestTimeout,
    StartupFailed,
    TransportError,
)
from openenv.containers import DockerProvider, DockerReplica

from .conftest import MANAGED, OWNER, container_for_url, managed, owner_label, wait_gone

MiB = 1024 * 1024


def run_episode(env: EnvClient[Any, Any, Any], steps: int = 2) -> None:
    assert env.reset().observation.echoed_message == "Echo environment ready!"
    for i in range(steps):
        assert env.step(EchoAction(message=f"m{i}")).observation.echoed_message == f"m{i}"
    assert env.state().step_count == steps


# --- from_docker_image ------------------------------------------------------------------


def test_sync_from_docker_image_runs_an_episode_and_close_removes_the_container(
    docker: Any, echo_image: str
) -> None:
    env = EnvClient.from_docker_image(echo_image, MODELS, timeout_s=10)
    try:
        container = container_for_url(docker, env.base_url)
        assert container.labels[OWNER] == owner_label()
        assert container.labels["openenv.image"] == echo_image
        assert container.attrs["HostConfig"]["AutoRemove"] is True
        run_episode(env)
    finally:
        env.close()
    assert wait_gone(docker, container.id), "the container is still there after close()"
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{env.base_url}/health", timeout=2)


async def test_async_from_docker_image_runs_an_episode_and_close_removes_the_container(
    docker: Any, echo_image: str
) -> None:
    env = await AsyncEnvClient.from_docker_image(echo_image, MODELS, timeout_s=10)
    try:
        container = container_for_url(docker, env.base_url)
        assert container.labels[OWNER] == owner_label()
        assert (await env.reset()).observation.echoed_message == "Echo environment ready!"
        for i in range(2):
            assert (await env.step(EchoAction(message=f"a{i}"))).observation.echoed_message == f"a{i}"
        assert (await env.state()).step_count == 2
    finally:
        await env.close()
    assert wait_gone(docker, container.id), "the container is still there after close()"


# --- a container that dies or freezes under a client -------------------------------------------


def test_killed_container_gives_the_sync_client_a_typed_error(docker: Any, echo_image: str) -> None:
    timeout_s = 3.0
    env = EnvClient.from_docker_image(echo_image, MODELS, timeout_s=timeout_s)
    try:
        env.reset()
        env.step(EchoAction(message="before"))
        container = container_for_url(docker, env.base_url)
        container.kill()
        t0 = time.monotonic()
        with pytest.raises((ConnectionClosed, RequestTimeout)) as info:
            env.step(EchoAction(message="after"))
        elapsed = time.monotonic() - t0
        assert isinstance(info.value, TransportError)
        assert isinstance(info.value, OpenEnvError)
        # a hang bound: closed at once normally, at worst the timeout and its reply margin
        assert elapsed < timeout_s + env.reply_margin_s + 10, f"the error took {elapsed:.1f} s"
        # The client is done with; a later call says so at once instead of hanging.
        with pytest.raises(OpenEnvError):
            env.step(EchoAction(message="again"))
    finally:
        env.close()
    assert wait_gone(docker, container.id), "the killed container was not auto-removed"


async def test_killed_container_gives_the_async_client_a_typed_error(docker: Any, echo_image: str) -> None:
    timeout_s = 3.0
    env = await AsyncEnvClient.from_docker_image(echo_image, MODELS, timeout_s=timeout_s)
    try:
        await env.reset()
        container = container_for_url(docker, env.base_url)
        container.kill()
        t0 = time.monotonic()
        with pytest.raises((ConnectionClosed, RequestTimeout)):
            await env.step(EchoAction(message="after"))
        assert time.monotonic() - t0 < timeout_s + env.reply_margin_s + 10  # a hang bound
    finally:
        await env.close()
    assert wait_gone(docker, container.id)


def test_frozen_container_gives_request_timeout_not_a_hang(docker: Any, echo_image: str) -> None:
    """``docker pause`` mid-episode: no reply and no close, so the client's timeout fires."""
    timeout_s = 1.5
    env = EnvClient.from_docker_image(echo_image, MODELS, timeout_s=timeout_s)
    container = None
    paused = False
    try:
        env.reset()
        container = container_for_url(docker, env.base_url)
        container.pause()
        paused = True
        t0 = time.monotonic()
        with pytest.raises(RequestTimeout):
            env.step(EchoAction(message="into the void"))
        elapsed = time.monotonic() - t0
        # The client's timeout is the server's deadline; it waits reply_margin_s longer for
        # the server's own DEADLINE_EXCEEDED, which a paused container never sends.
        waited = timeout_s + env.reply_margin_s
        assert waited - 0.2 < elapsed < waited + 10, elapsed  # not early; late only by load
    finally:
        if paused:
            container.unpause()
        env.close()
    assert container is not None
    assert wait_gone(docker, container.id)


# --- start failures ---------------------------------------------------------------------


def _mine(docker: Any) -> set[str]:
    return {c.id for c in managed(docker, **{OWNER: owner_label()})}


def _left_behind(docker: Any, before: set[str]) -> set[str]:
    """Containers of ours that are new since ``before`` and still there after their
    auto-removal had time to finish (the engine removes them just after stop())."""
    return {cid for cid in _mine(docker) - before if not wait_gone(docker, cid, timeout_s=10)}


def start_via(via: str, image: str, options: dict[str, Any]) -> Any:
    if via == "provider":
        return DockerProvider(image, **options).start()
    return EnvClient.from_docker_image(image, MODELS, provider_options=options)


@pytest.mark.parametrize("via", ["provider", "from_docker_image"])
def test_startup_failure_reports_the_container_logs_and_leaves_nothing(
    docker: Any, echo_image: str, via: str
) -> None:
    before = _mine(docker)
    options: dict[str, Any] = {"env": {"OPENENV_PORT": "notanumber"}, "start_timeout_s": 180}
    t0 = time.monotonic()
    with pytest.raises(StartupFailed) as info:
        start_via(via, echo_image, options)
    elapsed = time.monotonic() - t0
    message = str(info.value)
    assert "exited before it became healthy" in message
    assert "--- last log lines ---" in message
    assert "OPENENV_PORT='notanumber' is not a valid int" in message, message
    assert "OPENENV_PORT='notanumber'" in info.value.logs
    # at once (a container's and a Python's start), not at the 180 s timeout
    assert elapsed < 60, f"a crashing container took {elapsed:.1f} s to be reported"
    assert not _left_behind(docker, before), "a container was left behind"


def test_a_container_that_exits_at_once_still_reports_its_output(docker: Any, echo_image: str) -> None:
    """The shared base image has no server command: it prints a hint and exits within
    milliseconds, and auto-removal follows. Its output must still reach the error
    (output is attached before the container starts, as ``docker run`` does)."""
    from openenv.containers._build import base_image_tag

    from .conftest import base_image

    before = _mine(docker)
    for _ in range(3):  # the race this guards against did not show every time
        with pytest.raises(StartupFailed) as info:
            DockerProvider(base_image_tag(base_image(docker)), start_timeout_s=30).start()
        assert "openenv base image: give a command" in info.value.logs, str(info.value)
    assert not _left_behind(docker, before)


def test_startup_timeout_reports_and_leaves_nothing(docker: Any, echo_image: str) -> None:
    """The server listens on the container's loopback only: never reachable, so the
    health wait runs out (bounded by ``start_timeout_s``), and the container goes."""
    before = _mine(docker)
    t0 = time.monotonic()
    with pytest.raises(StartupFailed, match=r"not healthy at http://127\.0\.0\.1:\d+/health within 3"):
        DockerProvider(echo_image, env={"OPENENV_HOST": "127.0.0.1"}, start_timeout_s=3).start()
    assert time.monotonic() - t0 < 30  # a hang bound: 3 s and a container's start and stop
    assert not _left_behind(docker, before), "a container was left behind"


def test_missing_image_is_a_provider_error(docker: Any) -> None:
    before = _mine(docker)
    with pytest.raises(ProviderError, match="openenv-test-no-such-image") as info:
        DockerProvider("openenv-test-no-such-image:never", start_timeout_s=5).start()
    assert not isinstance(info.value, StartupFailed)
    assert not _left_behind(docker, before)


# --- resource limits and container settings ----------------------------------------------


def test_limits_labels_and_ports_land_in_the_container(docker: Any, echo_image: str) -> None:
    replica = DockerProvider(echo_image, cpus=0.5, memory="256m", labels={"openenv.test": "limits"}).start()
    try:
        assert isinstance(replica, DockerReplica)
        attrs = docker.containers.get(replica.id).attrs
        host = attrs["HostConfig"]
        assert host["NanoCpus"] == 500_000_000
        assert host["Memory"] == 256 * MiB
        assert host["AutoRemove"] is True
        assert [b["HostIp"] for b in host["PortBindings"]["8000/tcp"]] == ["127.0.0.1"]
        labels = attrs["Config"]["Labels"]
        assert labels[MANAGED] == "1"
        assert labels[OWNER] == owner_label()
        assert labels["openenv.test"] == "limits"
        env = dict(item.split("=", 1) for item in attrs["Config"]["Env"])
        assert env["OPENENV_HOST"] == "0.0.0.0"
        assert env["OPENENV_PORT"] == "8000"
        # ...and the server works under them.
        with EnvClient(replica.base_url, MODELS, timeout_s=10) as env_client:
            run_episode(env_client, steps=1)
        assert replica.alive()
    finally:
        replica.stop()
    assert not replica.alive()
    assert wait_gone(docker, replica.id)
    replica.stop()  # idempotent


def test_replica_logs_follow_the_server_output(docker: Any, echo_image: str) -> None:
    replica = DockerProvider(echo_image, env={"OPENENV_LOG_LEVEL": "info"}).start()
    try:
        deadline = time.monotonic() + 10
        while "Uvicorn running" not in replica.logs() and "Application startup" not in replica.logs():
            assert time.monotonic() < deadline, f"no startup line in the logs: {replica.logs()!r}"
            time.sleep(0.1)
    finally:
        replica.stop()
    assert wait_gone(docker, replica.id)


def test_a_provider_releases_its_own_client_when_no_replica_of_it_runs(
    docker: Any, echo_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client left to the garbage collector leaves its engine socket open until then,
    # and its ResourceWarning lands in whatever code runs at that moment.
    provider = DockerProvider(echo_image, start_timeout_s=60)
    closes: list[int] = []
    client = provider.client
    real_close = client.close
    monkeypatch.setattr(client, "close", lambda: (closes.append(1), real_close()))
    first, second = provider.start(), provider.start()
    first.stop()
    assert closes == []  # the second replica still uses it
    second.stop()
    assert closes == [1]
    third = provider.start()  # a released client is still usable
    try:
        assert httpx.get(f"{third.base_url}/health", timeout=5).status_code == 200
    finally:
        third.stop()
    assert closes == [1, 1]
    third.stop()  # idempotent: not released twice
    assert closes == [1, 1]


def test_a_provider_never_closes_a_client_it_was_given(
    docker: Any, echo_image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    closes: list[int] = []
    monkeypatch.setattr(docker, "close", lambda: closes.append(1))
    replica = DockerProvider(echo_image, client=docker).start()
    replica.stop()
    assert closes == []
