"""``LocalProcessProvider``, ``from_env`` and a pool of local processes: no Docker needed.

Every server is a real ``python -m openenv serve`` child bound to 127.0.0.1 on a free
port; every replica is stopped in ``finally`` and checked to be gone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from echo_env import MODELS, EchoAction, EchoObservation

from openenv import AsyncEnvClient, EnvClient
from openenv._exceptions import ProviderError, StartupFailed
from openenv.containers import LocalProcessProvider, ProcessReplica, ReplicaPool

REPO = Path(__file__).resolve().parents[2]
ECHO = str(REPO / "envs" / "echo_env")


def refused(url: str) -> bool:
    try:
        httpx.get(f"{url}/health", timeout=2)
    except httpx.TransportError:
        return True
    return False


def active_sessions(url: str) -> int:
    return int(httpx.get(f"{url}/sessions", timeout=5).json()["active_sessions"])


# --- LocalProcessProvider -------------------------------------------------------------------


def test_local_provider_starts_a_healthy_server_and_stops_it() -> None:
    replica = LocalProcessProvider(ECHO).start()
    try:
        assert isinstance(replica, ProcessReplica)
        assert replica.base_url.startswith("http://127.0.0.1:")
        assert replica.alive()
        assert httpx.get(f"{replica.base_url}/health", timeout=5).json() == {"status": "healthy"}
        # Bound to loopback only.
        port = int(replica.base_url.rsplit(":", 1)[1])
        listening = {
            c.laddr.ip
            for c in psutil.Process(replica.proc.pid).net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port
        }
        assert listening == {"127.0.0.1"}
        with EnvClient(replica.base_url, MODELS, timeout_s=10) as env:
            env.reset()
            assert env.step(EchoAction(message="local")).observation.echoed_message == "local"
    finally:
        replica.stop()
    assert not replica.alive()
    assert replica.proc.returncode is not None
    assert refused(replica.base_url)
    assert not os.path.exists(replica.log_path), "the log file was not removed"
    replica.stop()  # idempotent


def test_local_provider_env_reaches_the_server() -> None:
    replica = LocalProcessProvider(ECHO, env={"OPENENV_MAX_SESSIONS": "3"}).start()
    try:
        assert httpx.get(f"{replica.base_url}/sessions", timeout=5).json()["max_sessions"] == 3
    finally:
        replica.stop()


def test_local_provider_stop_kills_the_whole_process_group() -> None:
    replica = LocalProcessProvider(ECHO, workers=2).start()
    try:
        parent = psutil.Process(replica.proc.pid)
        deadline = time.monotonic() + 10
        while len(parent.children(recursive=True)) < 2:
            assert time.monotonic() < deadline, "the two worker processes did not appear"
            time.sleep(0.05)
        family = [parent, *parent.children(recursive=True)]
    finally:
        replica.stop()
    _, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, f"left running: {alive}"


def test_local_provider_stop_reaches_a_child_the_server_does_not_stop(tmp_path: Path) -> None:
    """The server exits on SIGTERM by itself, but the ``sleep`` its env started only dies
    if the whole process group is signalled."""
    pid_file = tmp_path / "child.pid"
    provider = LocalProcessProvider(
        "tests.containers._spawning_env:SpawningEnv",
        env={"OPENENV_TEST_CHILD_PID_FILE": str(pid_file), "PYTHONPATH": str(REPO)},
    )
    replica = provider.start()
    try:
        child = psutil.Process(int(pid_file.read_text()))
        assert child.is_running()
        assert os.getpgid(child.pid) == replica.proc.pid  # same group as the server
    finally:
        replica.stop()
    _, alive = psutil.wait_procs([child], timeout=10)
    assert not alive, "the env's child outlived replica.stop()"


def test_bad_target_fails_fast_with_the_server_log_lines() -> None:
    t0 = time.monotonic()
    with pytest.raises(StartupFailed) as info:  # the crash takes a Python start (1-2 s; 10 s loaded)
        LocalProcessProvider("openenv_test_no_such_module:Env", start_timeout_s=120).start()
    assert time.monotonic() - t0 < 45, "a crashed server must be reported at once, not at the timeout"
    message = str(info.value)
    assert "exited before it became healthy" in message
    assert "--- last log lines ---" in message
    assert "openenv_test_no_such_module" in info.value.logs, info.value.logs


def test_bad_setting_fails_with_the_settings_error_in_the_logs() -> None:
    with pytest.raises(StartupFailed) as info:
        LocalProcessProvider(ECHO, env={"OPENENV_MAX_SESSIONS": "many"}, start_timeout_s=30).start()
    assert "OPENENV_MAX_SESSIONS='many' is not a valid int" in info.value.logs


def test_server_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    """A process that runs but never serves: StartupFailed after ``start_timeout_s``,
    with its output, and the process is gone."""
    fake_python = tmp_path / "python"
    pid_file = tmp_path / "pid"
    fake_python.write_text(
        f'#!/bin/sh\necho "pretending to serve $*"\necho $$ > {pid_file}\nexec sleep 600\n'
    )
    fake_python.chmod(0o755)
    t0 = time.monotonic()
    with pytest.raises(StartupFailed, match=r"not healthy at .*/health within 1\.5 s") as info:
        LocalProcessProvider(ECHO, python=str(fake_python), start_timeout_s=1.5).start()
    assert time.monotonic() - t0 < 10
    assert "pretending to serve -m openenv serve" in info.value.logs
    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


# --- from_env --------------------------------------------------------------------------------


def test_sync_from_env_runs_an_episode_and_close_stops_the_server() -> None:
    env = EnvClient.from_env(ECHO, MODELS, timeout_s=10)
    try:
        result = env.reset()
        assert isinstance(result.observation, EchoObservation)
        for i in range(3):
            assert env.step(EchoAction(message=f"e{i}")).observation.echoed_message == f"e{i}"
        assert env.state().step_count == 3
    finally:
        env.close()
    assert refused(env.base_url), "the server still answers after close()"


async def test_async_from_env_runs_an_episode_and_close_stops_the_server() -> None:
    env = await AsyncEnvClient.from_env(ECHO, MODELS, timeout_s=10)
    try:
        await env.reset()
        assert (await env.step(EchoAction(message="async"))).observation.echoed_message == "async"
    finally:
        await env.close()
    assert refused(env.base_url)


def test_from_env_with_a_bad_target_raises_startup_failed() -> None:
    with pytest.raises(StartupFailed, match="openenv_test_no_such_module"):
        EnvClient.from_env("openenv_test_no_such_module:Env", MODELS)


# --- a pool of local processes ----------------------------------------------------------------


async def test_pool_of_two_local_replicas() -> None:
    pool = ReplicaPool(LocalProcessProvider(ECHO), 2)
    clients: list[Any] = []
    procs: list[Any] = []
    try:
        pool.open()
        procs = [r.proc for r in pool.replicas]  # type: ignore[attr-defined]
        urls = pool.urls
        assert len(set(urls)) == 2
        a, b = pool.acquire(), pool.acquire()
        assert {a, b} == set(urls)
        assert pool.load() == dict.fromkeys(urls, 1)
        pool.release(a)
        pool.release(b)
        pool.release(b)  # an extra release never goes below zero
        assert pool.load() == dict.fromkeys(urls, 0)

        for i in range(2):
            env = EnvClient.from_provider(pool, MODELS, timeout_s=10)  # the pool is a Provider
            clients.append(env)
            env.reset()
            assert env.step(EchoAction(message=f"p{i}")).observation.echoed_message == f"p{i}"
        assert sorted(c.base_url for c in clients) == sorted(urls)
        assert pool.broadcast(active_sessions) == [1, 1]

        freed = clients.pop()
        freed.close()
        assert pool.load()[freed.base_url] == 0
        aenv = await AsyncEnvClient.from_provider(pool, MODELS, timeout_s=10)
        assert aenv.base_url == freed.base_url
        await aenv.reset()
        await aenv.close()
        assert pool.load() == {u: 0 if u == freed.base_url else 1 for u in urls}
    finally:
        for env in clients:
            env.close()
        pool.stop()
    assert pool.load() == {}
    assert all(p.poll() is not None for p in procs)
    assert all(refused(u) for u in urls)
    with pytest.raises(ProviderError, match="not open"):
        pool.acquire()
    with pytest.raises(ProviderError, match="not open"):
        EnvClient.from_provider(pool, MODELS)


def test_pool_with_a_failing_replica_stops_the_ones_that_started() -> None:
    class OneBadProvider(LocalProcessProvider):
        """Test double: the second start fails like a crashing server."""

        calls = 0
        started: list[ProcessReplica] = []

        def start(self) -> ProcessReplica:
            type(self).calls += 1
            if type(self).calls == 2:
                raise StartupFailed("replica 2 exited before it became healthy", "boom")
            replica = super().start()
            self.started.append(replica)
            return replica

    pool = ReplicaPool(OneBadProvider(ECHO), 2)
    with pytest.raises(StartupFailed, match="replica 2"):
        pool.open()
    assert pool.replicas == []
    assert OneBadProvider.started, "the good replica should have started"
    for replica in OneBadProvider.started:
        assert not replica.alive()
