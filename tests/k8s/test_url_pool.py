"""``UrlPool`` over real ``openenv serve`` processes on 127.0.0.1: least-loaded routing,
sessions pinned to their replica, and a replica killed mid-episode failing only its own
sessions with ``ReplicaLost`` while new sessions go to the live ones."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from echo_env import MODELS, EchoAction

from openenv import EnvClient
from openenv._exceptions import ProviderError, ReplicaLost
from openenv.containers import LocalProcessProvider, ProcessReplica
from openenv.k8s import UrlPool, resolve

ECHO = str(Path(__file__).resolve().parents[2] / "envs" / "echo_env")


def active_sessions(url: str) -> int:
    return int(httpx.get(f"{url}/sessions", timeout=5).json()["active_sessions"])


@pytest.fixture
def servers() -> Iterator[list[ProcessReplica]]:
    """Two echo servers, each its own process group; stopped (and checked gone) after."""
    provider = LocalProcessProvider(ECHO)
    started: list[ProcessReplica] = []
    try:
        for _ in range(2):
            started.append(provider.start())
        yield started
    finally:
        for replica in started:
            replica.stop()
        assert not any(r.alive() for r in started)


def serve_on(port: int) -> ProcessReplica:
    """An echo server on this port again (a pod that Kubernetes restarted)."""
    log_path = str(Path(tempfile.mkdtemp(prefix="openenv-k8s-test-")) / "serve.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "openenv", "serve", ECHO, "--port", str(port), "--host", "127.0.0.1"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    replica = ProcessReplica(proc, f"http://127.0.0.1:{port}", log_path)
    replica.wait_ready(30.0, "openenv serve (restarted)")
    return replica


def kill(replica: ProcessReplica, sig: signal.Signals = signal.SIGKILL) -> None:
    os.killpg(replica.proc.pid, sig)
    replica.proc.wait(timeout=10)


# SIGKILL: a crash or a lost node; SIGTERM: a pod deleted or rolled (graceful shutdown).
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "terminated"])
def test_sessions_spread_by_load_and_a_dead_replica_fails_only_its_sessions(
    servers: list[ProcessReplica], sig: signal.Signals
) -> None:
    a, b = servers
    clients: list[EnvClient[Any, Any, Any]] = []
    with UrlPool([a.base_url, b.base_url]) as pool:
        try:
            for _ in range(4):
                env = pool.client(MODELS)
                env.reset()
                clients.append(env)
            assert pool.load() == {a.base_url: 2, b.base_url: 2}
            assert active_sessions(a.base_url) == active_sessions(b.base_url) == 2

            kill(a, sig)  # mid-episode: every session has reset and is about to step
            on_a = [c for c in clients if c.base_url == a.base_url]
            on_b = [c for c in clients if c.base_url == b.base_url]
            for env in on_a:
                with pytest.raises(ReplicaLost) as info:
                    env.step(EchoAction(message="hi"))
                assert info.value.url == a.base_url
            for env in on_b:
                assert env.step(EchoAction(message="hi")).observation.echoed_message == "hi"

            # New sessions go to the live replica only, although a now holds fewer leases.
            for env in on_a:
                env.close()
            assert pool.load() == {a.base_url: 0, b.base_url: 2}
            with pool.client(MODELS) as fresh:
                assert fresh.base_url == b.base_url
                assert fresh.reset() is not None
                assert fresh.step(EchoAction(message="again")).observation.echoed_message == "again"
            assert pool.load()[b.base_url] == 2
        finally:
            for env in clients:
                env.close()
    assert pool.load() == {}


def test_a_replica_that_comes_back_gets_new_sessions_again(servers: list[ProcessReplica]) -> None:
    a, b = servers
    with UrlPool([a.base_url, b.base_url]) as pool:
        kill(b)
        assert pool.client(MODELS).base_url == a.base_url  # b is skipped, not failed on
        restarted = serve_on(int(b.base_url.rsplit(":", 1)[1]))
        try:
            pool.replicas[1].suspect()  # type: ignore[attr-defined]  # skip the 1 s health cache
            with pool.client(MODELS) as env:
                assert env.base_url == b.base_url  # least-loaded again
        finally:
            restarted.stop()


def test_no_live_replica_is_a_provider_error_and_open_needs_one(servers: list[ProcessReplica]) -> None:
    a, b = servers
    kill(a)
    kill(b)
    with pytest.raises(ProviderError, match="answers /health"):
        UrlPool([a.base_url, b.base_url]).open()


def test_a_dns_name_resolves_to_its_addresses() -> None:
    assert resolve("localhost", 8123) in (["http://127.0.0.1:8123"], ["http://127.0.0.1:8123", "http://[::1]:8123"])
    assert resolve("no-such-name.invalid", 8000) == []
    with pytest.raises(ValueError, match="either urls or service"):
        UrlPool()
    with pytest.raises(ValueError, match="http"):
        UrlPool(["127.0.0.1:8000"])


def test_a_service_pool_finds_its_replica_by_name(servers: list[ProcessReplica]) -> None:
    port = int(servers[0].base_url.rsplit(":", 1)[1])
    with UrlPool(service="localhost", port=port) as pool, pool.client(MODELS) as env:
        assert env.base_url in pool.urls
        assert env.reset() is not None


def test_a_service_pool_follows_its_dns_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv.k8s import _pool  # UrlPool reads DNS through _pool.resolve

    answers = {"svc": ["http://10.0.0.1:8000", "http://10.0.0.2:8000"]}
    monkeypatch.setattr(_pool, "resolve", lambda name, port, scheme="http": list(answers[name]))
    pool = UrlPool(service="svc")
    assert pool.refresh() == ["http://10.0.0.1:8000", "http://10.0.0.2:8000"]
    pool._leases["http://10.0.0.1:8000"] = 1  # a session still pinned to the first pod
    answers["svc"] = ["http://10.0.0.3:8000"]  # both pods replaced
    assert pool.refresh() == ["http://10.0.0.1:8000", "http://10.0.0.3:8000"]  # the pinned one stays
    pool.release("http://10.0.0.1:8000")
    assert pool.refresh() == ["http://10.0.0.3:8000"]
    assert pool.size == 1


async def test_the_async_client_is_routed_and_fails_the_same_way(servers: list[ProcessReplica]) -> None:
    a, b = servers
    with UrlPool([a.base_url, b.base_url]) as pool:
        first, second = await pool.aclient(MODELS), await pool.aclient(MODELS)
        try:
            assert {first.base_url, second.base_url} == {a.base_url, b.base_url}
            await first.reset()
            await second.reset()
            doomed, survivor = (first, second) if first.base_url == a.base_url else (second, first)
            kill(a)
            with pytest.raises(ReplicaLost):
                await doomed.step(EchoAction(message="x"))
            assert (await survivor.step(EchoAction(message="y"))).observation.echoed_message == "y"
            fresh = await pool.aclient(MODELS)
            assert fresh.base_url == b.base_url
            await fresh.close()
        finally:
            await first.close()
            await second.close()
        assert pool.load() == {a.base_url: 0, b.base_url: 0}
