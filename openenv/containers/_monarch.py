"""Env replicas on a Monarch host mesh: ``MonarchProvider`` and ``MonarchReplicaPool``.

Each host of the mesh gets one process running a ``ReplicaHost`` actor; the actor starts
``openenv serve`` replicas there as child processes, waits for their ``/health`` on the
host and reports their URL. The controller (this process) sends every host a heartbeat
each ``heartbeat_s``; a host whose heartbeat fails is lost with all its replicas.

Nothing outlives the controller. Each replica runs under a host-side lease (the actor
is ``_monarch_host``, the lease ``_lease_guard``): a thread in the replica's process
watches a lease file that the actor touches on every heartbeat, and its parent (the
actor's process). When the file is older than ``lease_s`` or removed, or the actor's
process is gone, it kills the replica's whole process group. The actor itself
exits when no heartbeat came for ``lease_s``. So a Ctrl-C, an exception or a
``SIGKILL``ed controller all end with the replicas gone within ``lease_s`` plus a few
seconds; ``close()`` ends them at once.

Locally the hosts are Monarch's ``ProcessJob`` (``MonarchProvider(target, hosts=2)``);
on a cluster pass the host mesh of a Slurm or Kubernetes job (``hosts=job.state().x``).
Imported only when used: Monarch is the ``train`` extra.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Mapping
from typing import Any

from .._exceptions import ProviderError
from .._extras import require
from .._health import CachedHealth
from ._base import ReplicaBase, wait_healthy
from ._pool import ReplicaPool

require("monarch.actor", extra="train", feature="env replicas on Monarch hosts")

from ._monarch_host import ReplicaHost  # noqa: E402  (the host side: Monarch's actor)

#: The names of the meshes a provider spawns: hosts, processes, actors.
MESH = "openenv_replica_hosts"
OUR_MESHES = (MESH, "openenv_replica_procs", "openenv_replicas")


def _ignore_our_faults() -> None:
    """Let a lost replica host be the pool's business, not the controller's end.

    Monarch ends the controller (a ``KeyboardInterrupt`` in its main thread) on a
    supervision failure no one handles, such as a host of ours dying. The pool handles
    those (the heartbeat marks the host lost; its replicas are replaced), so Monarch's
    ``unhandled_fault_hook`` is wrapped to drop failures of our meshes and pass on the rest.
    """
    import monarch.actor as monarch_actor

    previous = monarch_actor.unhandled_fault_hook
    if getattr(previous, "openenv_replicas", False):
        return

    def hook(failure: Any) -> None:
        if not _is_ours(failure):
            previous(failure)

    hook.openenv_replicas = True  # type: ignore[attr-defined]
    monarch_actor.unhandled_fault_hook = hook


def _is_ours(failure: Any) -> bool:
    """Whether a Monarch failure is of a mesh of ours: by its mesh's name, or by its
    report, which names the failed actor (a proc mesh's controller failing to stop a
    lost host's processes reports under the controller's name, not the mesh's)."""
    text = str(getattr(failure, "mesh_name", ""))
    for describe in (lambda: str(failure), lambda: failure.report()):
        try:
            text += " " + describe()
        except Exception:  # a report that cannot be made: judge by the rest
            continue
    return any(ours in text for ours in OUR_MESHES)


class MonarchReplica(ReplicaBase):
    """A replica on a Monarch host: alive while its host answers heartbeats, its
    process runs and its ``/health`` answers (asked at most every ``HEALTH_TTL_S``)."""

    def __init__(self, provider: MonarchProvider, host: int, rid: int, base_url: str, pid: int) -> None:
        self.provider, self.host, self.rid, self.base_url, self.pid = provider, host, rid, base_url, pid
        self.dead = False
        self._health = CachedHealth(base_url)

    def running(self) -> bool:
        """Whether its process runs, as its host last said (no ``/health`` asked)."""
        return not self.dead and self.host not in self.provider.lost_hosts

    def alive(self) -> bool:
        if not self.running():
            return False
        return self._health()

    def suspect(self) -> None:
        """Forget the last health answer: the next ``alive()`` asks the server."""
        self._health.forget()

    def wait_ready(self, timeout_s: float, what: str) -> None:
        try:
            wait_healthy(self.base_url, timeout_s=timeout_s, alive=self.running, logs=self.logs, what=what)
        except BaseException:
            self.stop()
            raise

    def logs(self, tail: int = 50) -> str:
        try:
            text: str = self.provider.call(self.host, "logs", self.rid, tail)
        except Exception as exc:
            return f"(the logs of {self.base_url} are on its host, which did not answer: {exc})"
        return text

    def stop(self) -> None:
        if self.dead:
            return
        self.dead = True
        if self.host not in self.provider.lost_hosts:
            with contextlib.suppress(Exception):
                self.provider.call(self.host, "stop_one", self.rid, timeout_s=5)
        self.provider.forget(self)


class MonarchProvider:
    """Starts ``openenv serve TARGET`` replicas on the hosts of a Monarch host mesh.

    Args:
        target: what ``openenv serve`` takes (an env folder, ``module:Class``, a name).
        hosts: a number of local hosts (Monarch's ``ProcessJob``, started here and killed
            on ``close()``) or a Monarch ``HostMesh`` (a Slurm or Kubernetes job's).
        env: extra environment variables for the servers.
        bind: the address the servers listen on (``0.0.0.0`` on a cluster).
        advertise: the host name in the URLs reported (default: ``bind``, or each
            host's own name when ``bind`` is ``0.0.0.0``).
        lease_s: how long replicas outlive the controller's last heartbeat.
        heartbeat_s: seconds between heartbeats.

    Replicas go to the host with the fewest; ``start()`` opens the provider if needed.
    """

    def __init__(
        self,
        target: str,
        *,
        hosts: int | Any = 2,
        env: Mapping[str, str] | None = None,
        python: str = sys.executable,
        workers: int = 1,
        bind: str = "127.0.0.1",
        advertise: str = "",
        lease_s: float = 10.0,
        heartbeat_s: float = 1.0,
        start_timeout_s: float = 60.0,
        call_timeout_s: float = 30.0,
    ) -> None:
        if lease_s <= 2 * heartbeat_s:
            raise ValueError("lease_s must be more than two heartbeats")
        self.target = target
        self.hosts_arg = hosts
        self.env = dict(env or {})
        self.python, self.workers, self.bind, self.advertise = python, workers, bind, advertise
        self.lease_s, self.heartbeat_s = lease_s, heartbeat_s
        self.start_timeout_s, self.call_timeout_s = start_timeout_s, call_timeout_s
        self.job: Any = None
        self.procs: Any = None
        self.actors: Any = None
        self.size = 0
        self.lost_hosts: set[int] = set()
        self.replicas: list[MonarchReplica] = []
        self._pending: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._beat: threading.Thread | None = None

    # --- the mesh ------------------------------------------------------------------------

    def open(self) -> MonarchProvider:
        """Spawn one ``ReplicaHost`` per host and start the heartbeat (idempotent)."""
        with self._lock:
            if self.actors is not None:
                return self
            if isinstance(self.hosts_arg, int):
                if self.hosts_arg < 1:
                    raise ValueError("a Monarch provider needs at least one host")
                from monarch.job import ProcessJob

                self.job = ProcessJob({MESH: self.hosts_arg})
                mesh = getattr(self.job.state(cached_path=None), MESH)
            else:
                mesh = self.hosts_arg
            _ignore_our_faults()
            try:
                self.procs = mesh.spawn_procs(per_host={"replica_procs": 1}, name="openenv_replica_procs")
                reap = self.job is not None  # a ProcessJob of ours: its hosts go too
                actors = self.procs.spawn("openenv_replicas", ReplicaHost, self.lease_s, reap)
                self.actors = actors.flatten("replica_host")
                self.size = len(self.actors)
            except BaseException:
                self._teardown()
                raise
            self._stopping.clear()
            self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="openenv-heartbeat")
            self._beat.start()
        return self

    def call(self, host: int, name: str, *args: Any, timeout_s: float | None = None) -> Any:
        """``ReplicaHost.name(*args)`` on ``host``, waiting at most ``timeout_s``."""
        if self.actors is None:
            raise ProviderError("the Monarch provider is closed")
        one = self.actors.slice(replica_host=host)
        return getattr(one, name).call_one(*args).get(timeout=timeout_s or self.call_timeout_s)

    def check_host(self, host: int, timeout_s: float = 3.0) -> bool:
        """Whether ``host`` answers within ``timeout_s``; if not, it is lost."""
        if host in self.lost_hosts:
            return False
        try:
            self.call(host, "pid", timeout_s=timeout_s)
        except Exception:
            self.lost_hosts.add(host)
            return False
        return True

    def _heartbeat(self) -> None:
        while not self._stopping.wait(self.heartbeat_s):
            for host in range(self.size):
                if host in self.lost_hosts or self._stopping.is_set():
                    continue
                try:
                    running: dict[int, bool] = self.call(host, "heartbeat", timeout_s=self.lease_s / 2)
                except Exception:
                    self.lost_hosts.add(host)  # its replicas are dead to us; its lease reaps them
                    continue
                for r in list(self.replicas):
                    if r.host == host and running.get(r.rid) is False:
                        r.dead = True

    # --- the Provider interface ------------------------------------------------------------

    def start(self) -> MonarchReplica:
        """One replica on the live host with the fewest; tries each live host once."""
        self.open()
        last: Exception | None = None
        for _ in range(self.size):
            with self._lock:
                live = [h for h in range(self.size) if h not in self.lost_hosts]
                if not live:
                    break
                count = {h: self._pending.get(h, 0) for h in live}
                for r in self.replicas:
                    if r.host in count and not r.dead:
                        count[r.host] += 1
                host = min(live, key=lambda h: (count[h], h))
                self._pending[host] = self._pending.get(host, 0) + 1
            try:
                replica = self._start_on(host)
            except ProviderError as exc:
                last = exc
                continue
            finally:
                with self._lock:
                    self._pending[host] -= 1
            replica.wait_ready(self.start_timeout_s, f"openenv serve {self.target} on Monarch host {host}")
            return replica
        raise ProviderError(f"no Monarch host could start a replica of {self.target} ({last})")

    def _start_on(self, host: int) -> MonarchReplica:
        """Ask ``host`` to start a replica (not yet healthy); a silent host is lost."""
        args = (self.target, self.env, self.python, self.workers, self.bind, self.advertise)
        try:
            rid, url, pid = self.call(host, "start", *args)
        except Exception as exc:  # the host does not answer: lost
            self.lost_hosts.add(host)
            raise ProviderError(f"Monarch host {host} did not start a replica: {exc}") from exc
        replica = MonarchReplica(self, host, rid, url, pid)
        with self._lock:
            self.replicas.append(replica)
        return replica

    def forget(self, replica: MonarchReplica) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self.replicas.remove(replica)

    def close(self) -> None:
        """Stop every replica, the host actors and (when started here) the job. Bounded."""
        self._stopping.set()
        if self._beat is not None:
            self._beat.join(timeout=self.lease_s)
            self._beat = None
        with self._lock:
            self._teardown()

    def _teardown(self) -> None:
        if self.actors is not None:
            for host in range(self.size):
                if host not in self.lost_hosts:
                    with contextlib.suppress(Exception):
                        self.call(host, "stop_all", timeout_s=15)
        for r in self.replicas:
            r.dead = True
        self.replicas = []
        self.actors = None
        if self.procs is not None:
            with contextlib.suppress(Exception):
                self.procs.stop().get(timeout=15)
            self.procs = None
        if self.job is not None:
            with contextlib.suppress(Exception):
                self.job.kill()
            self.job = None

    def pids(self) -> dict[str, list[int]]:
        """Process ids on the hosts (for tests and tools): ``hosts`` (a ``ProcessJob``
        started here), ``actors`` (the ``ReplicaHost`` processes) and ``replicas``."""
        hosts = [p.pid for p in self.job._host_to_pid.values()] if self.job is not None else []
        actors = [int(self.call(h, "pid")) for h in range(self.size) if h not in self.lost_hosts]
        return {"hosts": hosts, "actors": actors, "replicas": [r.pid for r in self.replicas]}


class MonarchReplicaPool(ReplicaPool):
    """A ``ReplicaPool`` on Monarch hosts that replaces lost replicas.

    Each ``acquire()`` (a new session) first replaces the replicas found dead (a killed
    process, a lost host) by new ones on the live hosts, so new sessions resume on a
    full pool; the sessions of a lost replica fail (their client raises a transport
    error; the pool's ``alive()`` says the replica is gone). ``stop()`` closes the
    provider: nothing is left running.

    >>> with MonarchReplicaPool(MonarchProvider("envs/echo_env", hosts=2), 2) as pool:  # doctest: +SKIP
    ...     with EnvClient.from_provider(pool, MODELS) as env:
    ...         env.reset()
    """

    provider: MonarchProvider

    def __init__(self, provider: MonarchProvider, replicas: int) -> None:
        super().__init__(provider, replicas)
        self.replaced = 0
        self._healing = threading.Lock()

    def open(self) -> MonarchReplicaPool:
        try:
            self.provider.open()
            super().open()
        except BaseException:
            self.provider.close()
            raise
        return self

    def heal(self) -> int:
        """Replace every dead replica (bounded: one try each); how many were replaced."""
        with self._healing:
            dead = [r for r in self.replicas if isinstance(r, MonarchReplica) and not r.alive()]
            done = 0
            for old in dead:
                self.provider.check_host(old.host)
                try:
                    new = self.provider.start()
                except Exception:
                    continue
                old.stop()
                with self._lock:
                    self.replicas = [new if r is old else r for r in self.replicas]
                    self._leases.pop(old.base_url, None)
                    self._leases[new.base_url] = 0
                done += 1
            self.replaced += done
            return done

    def acquire(self) -> str:
        if self.replicas and not all(r.alive() for r in self.replicas):
            self.heal()
        return super().acquire()

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            self.provider.close()
