"""``ReplicaPool(DockerProvider(...), 2)``: two containers, sessions spread over both."""

from __future__ import annotations

from typing import Any

import httpx
from echo_env import MODELS, EchoAction

from openenv import AsyncEnvClient, EnvClient
from openenv.containers import DockerProvider, DockerReplica, ReplicaPool

from .conftest import container_for_url, wait_gone


def active_sessions(url: str) -> int:
    r = httpx.get(f"{url}/sessions", timeout=5)
    r.raise_for_status()
    return int(r.json()["active_sessions"])


async def test_pool_of_two_containers_spreads_sessions_and_stop_removes_both(
    docker: Any, echo_image: str
) -> None:
    pool = ReplicaPool(DockerProvider(echo_image), 2)
    clients: list[EnvClient[Any, Any, Any]] = []
    ids: list[str] = []
    try:
        pool.open()
        assert len(pool.replicas) == 2
        assert all(isinstance(r, DockerReplica) for r in pool.replicas)
        ids = [r.id for r in pool.replicas]  # type: ignore[attr-defined]
        urls = pool.urls
        assert len(set(urls)) == 2
        assert len(set(ids)) == 2
        assert [container_for_url(docker, u).id for u in urls] == ids
        assert pool.load() == {urls[0]: 0, urls[1]: 0}

        # acquire/release: least-loaded first, so two acquires land on both.
        a, b = pool.acquire(), pool.acquire()
        assert {a, b} == set(urls)
        assert pool.load() == {urls[0]: 1, urls[1]: 1}
        pool.release(a)
        pool.release(b)
        assert pool.load() == {urls[0]: 0, urls[1]: 0}

        # the pool is a Provider: one session per replica, each really served by its own container.
        for i in range(2):
            env = EnvClient.from_provider(pool, MODELS, timeout_s=10)
            clients.append(env)
            env.reset()
            assert env.step(EchoAction(message=f"r{i}")).observation.echoed_message == f"r{i}"
        assert {c.base_url for c in clients} == set(urls)
        assert pool.load() == {urls[0]: 1, urls[1]: 1}
        assert pool.broadcast(active_sessions) == [1, 1]
        assert pool.broadcast(lambda u: (u, httpx.get(f"{u}/health", timeout=5).status_code)) == [
            (u, 200) for u in urls
        ]

        # Closing a client returns its lease; the next session goes where there is room.
        freed = clients.pop(0)
        freed.close()
        assert pool.load()[freed.base_url] == 0
        env = EnvClient.from_provider(pool, MODELS, timeout_s=10)
        clients.append(env)
        assert env.base_url == freed.base_url

        # the async client leases the same way.
        aenv = await AsyncEnvClient.from_provider(pool, MODELS, timeout_s=10)
        try:
            await aenv.reset()
            assert isinstance(aenv, AsyncEnvClient)
            assert pool.load() == {u: 2 if u == aenv.base_url else 1 for u in urls}
        finally:
            await aenv.close()
        assert pool.load() == {urls[0]: 1, urls[1]: 1}
    finally:
        for env in clients:
            env.close()
        pool.stop()
    assert pool.replicas == []
    assert pool.load() == {}
    for container_id in ids:
        assert wait_gone(docker, container_id), f"container {container_id[:12]} survived pool.stop()"
