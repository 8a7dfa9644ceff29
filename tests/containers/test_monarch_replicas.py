"""Env replicas on Monarch process-job hosts: started one per host, routed by load; a
replica or a whole host killed mid-episode fails only its sessions (``ReplicaLost``),
the pool replaces it, and no process survives ``close()`` or a killed controller."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("monarch.actor", reason="Monarch (the train extra) is not installed")

from echo_env import MODELS, EchoAction

from openenv._exceptions import ReplicaLost
from openenv.containers._monarch import MonarchProvider, MonarchReplicaPool
from openenv.containers._pool import PoolLease
from openenv.k8s._pinned import PinnedClient

ROOT = Path(__file__).resolve().parents[2]
ECHO = str(ROOT / "envs" / "echo_env")


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _wait_gone(pids: list[int], within_s: float) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        left = [p for p in pids if _running(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in pids if _running(p)]


def _session(pool: MonarchReplicaPool) -> PinnedClient:  # type: ignore[type-arg]
    lease: PoolLease = pool.start()
    client: PinnedClient = PinnedClient(lease.base_url, MODELS)  # type: ignore[type-arg]
    client.lease = lease
    client.on_close(lease.stop)
    return client.connect()


def _all_pids(pool: MonarchReplicaPool) -> list[int]:
    p = pool.provider.pids()
    return p["hosts"] + p["actors"] + p["replicas"]


@pytest.mark.timeout(300)  # two hosts and three servers start on a loaded machine
@pytest.mark.parametrize("kill", ["replica", "host"])
def test_replicas_route_by_load_and_recover_from_a_kill(kill: str) -> None:
    pool = MonarchReplicaPool(MonarchProvider(ECHO, hosts=2, lease_s=6), 2).open()
    try:
        assert sorted(r.host for r in pool.provider.replicas) == [0, 1]  # one per host
        seen = _all_pids(pool)
        sessions = [_session(pool) for _ in range(4)]
        for env in sessions:
            env.reset()
        assert sorted(pool.load().values()) == [2, 2]  # least-loaded first
        victim = pool.provider.replicas[0]
        if kill == "replica":
            os.kill(victim.pid, signal.SIGKILL)
        else:  # the whole host: its worker process and the actor's process
            host_pid = pool.provider.pids()["hosts"][victim.host]
            actor_pid = int(pool.provider.call(victim.host, "pid"))
            os.kill(host_pid, signal.SIGKILL)
            os.kill(actor_pid, signal.SIGKILL)
        assert _wait_gone([victim.pid], 30) == []  # a host's replicas die with it
        victim.suspect()  # forget a /health answer from before the kill (kept HEALTH_TTL_S)
        lost: list[str] = []
        ok = 0
        for env in sessions:
            try:
                env.step(EchoAction(message="hi"))
                ok += 1
            except ReplicaLost as exc:
                lost.append(exc.url)
        assert lost == [victim.base_url] * 2  # only the dead replica's sessions fail
        assert ok == 2
        with _session(pool) as fresh:  # the pool replaces the replica, new sessions work
            fresh.reset()
            assert fresh.step(EchoAction(message="x")).observation.echoed_message == "x"
        assert pool.replaced == 1
        assert len(pool.replicas) == 2
        assert all(r.alive() for r in pool.replicas)
        if kill == "host":  # the replacement went to the live host
            assert {r.host for r in pool.provider.replicas} == {1 - victim.host}
        seen += _all_pids(pool)
        for env in sessions:
            env.close()
    finally:
        pool.stop()
    assert _wait_gone(seen, 30) == []  # nothing survives close()


CONTROLLER = """
import json, sys, time
from openenv.containers._monarch import MonarchProvider, MonarchReplicaPool
pool = MonarchReplicaPool(MonarchProvider(sys.argv[1], hosts=2, lease_s=8), 2).open()
print(json.dumps(pool.provider.pids()), flush=True)
time.sleep(300)
"""


@pytest.mark.timeout(300)
def test_a_killed_controller_leaves_nothing_running(tmp_path: Path) -> None:
    err = (tmp_path / "controller.err").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-c", CONTROLLER, ECHO], stdout=subprocess.PIPE, stderr=err, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded: the pool starts or the process exits
        err.seek(0)
        assert line, f"the controller exited ({proc.wait(30)}) before its pool started: {err.read()[-3000:]}"
        pids = json.loads(line)
        everything = pids["hosts"] + pids["actors"] + pids["replicas"]
        assert len(everything) == 6
        assert all(_running(p) for p in everything)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    # the lease (8 s without a heartbeat: a margin for a loaded host) reaps replicas, actors, hosts
    assert _wait_gone(everything, 60) == []


class _Failure:
    """The two things the fault hook reads of Monarch's ``MeshFailure``."""

    def __init__(self, mesh_name: str, text: str) -> None:
        self.mesh_name, self.text = mesh_name, text

    def __str__(self) -> str:
        return self.text

    def report(self) -> str:
        return self.text


def test_the_fault_hook_keeps_our_meshes_failures_and_passes_on_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import monarch.actor as monarch_actor

    from openenv.containers import _monarch

    passed_on: list[object] = []
    monkeypatch.setattr(monarch_actor, "unhandled_fault_hook", passed_on.append)
    _monarch._ignore_our_faults()
    hook = monarch_actor.unhandled_fault_hook
    stopping = _Failure(
        "client", "actor proc_mesh_controller_openenv_replica_procs-bp3ab7 failed: error stopping"
    )
    lost_host = _Failure("openenv_replica_hosts", "host 1 is gone")
    theirs = _Failure("trainer_workers", "actor trainer_workers failed")
    for failure in (stopping, lost_host, theirs):
        hook(failure)
    assert passed_on == [theirs]
    _monarch._ignore_our_faults()  # wrapping twice does not wrap the wrapper
    assert monarch_actor.unhandled_fault_hook is hook
