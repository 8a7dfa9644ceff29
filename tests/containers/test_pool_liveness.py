"""``ReplicaPool.acquire`` leases only live replicas: real ``openenv serve`` processes,
one killed, then both."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from openenv._exceptions import ProviderError
from openenv.containers import LocalProcessProvider, ProcessReplica, ReplicaPool

ECHO = str(Path(__file__).resolve().parents[2] / "envs" / "echo_env")


def kill(replica: ProcessReplica) -> None:
    os.killpg(replica.proc.pid, signal.SIGKILL)
    replica.proc.wait(timeout=10)


def test_a_local_pool_routes_new_sessions_past_a_dead_process() -> None:
    with ReplicaPool(LocalProcessProvider(ECHO), 2) as pool:
        dead, live = pool.replicas
        kill(dead)  # type: ignore[arg-type]
        assert {pool.acquire(), pool.acquire()} == {live.base_url}
        kill(live)  # type: ignore[arg-type]
        with pytest.raises(ProviderError, match="no replica of the pool is alive"):
            pool.acquire()
