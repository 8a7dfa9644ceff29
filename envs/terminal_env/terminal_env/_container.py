"""One session's container of a task's image, with the ``Sandbox`` methods the shell and
the env use (``popen``, ``spawn``, ``arun``, ``kill``, ``close``, ``describe``, ``repin``).

The container runs ``sleep infinity`` under Docker's init, with the session's limits
(memory with no swap on top, processes, CPUs; disk by the engine's storage driver where
it sizes containers, else its writable layer on a filesystem of the limit's size,
``_disk.py``), ``no-new-privileges``, and no network unless the task asks for one
(then the ICC-off ``openenv-isolated`` bridge: no other container is reachable).
The shell is ``docker exec -it ... bash``: the engine gives it a terminal of its own,
so Ctrl-C typed into ours reaches the command in the container.

``kill`` stops the whole container (every process in it, however started, dies with
its PID namespace) and starts it again on the same filesystem: what the agent wrote
stays, nothing it ran survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import shutil
import subprocess
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv._exceptions import ExecutionError
from openenv.sandbox import Completed, SessionLimits
from openenv.sandbox._offloop import Process, spawn_off_loop
from openenv.sandbox._procs import kill_group
from openenv.sandbox._run import spawn_and_run

from . import _disk
from ._compose_health import wait_task_ready
from ._harbor import ImageSettings
from ._owner import OWNER_LABEL
from ._services import SessionServices

__all__ = ["LABEL", "OWNER_LABEL", "ContainerBox", "ContainerLimits"]

LABEL = "openenv.terminal.session"
_MiB = 1 << 20
_disk_refused: dict[str, str] = {}  # engine id -> why a disk size is not enforced
_disk_guard = threading.Lock()
_engine_ids: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _engine_id(client: Any) -> str:
    """The engine's id (``docker info`` is slow: asked once per client)."""
    found = _engine_ids.get(client)
    if found is None:
        found = _engine_ids[client] = str(client.info().get("ID", ""))
    return found


def _task_bridge() -> str:
    """What a container with the network allowed joins: the task bridge, and whether this
    host's firewall keeps it from the host (``guard_host``: asked once per process)."""
    from openenv.containers._network import TASK_NETWORK, guard_host

    why = guard_host()
    return f"{TASK_NETWORK} bridge (host " + (f"not firewalled: {why})" if why else "firewalled)")


def _remove(container: Any, layer: Path | None = None, disk_file: Path | None = None) -> None:
    """Remove the container, and the filesystem of its writable layer where it has one
    (``_disk.py``; ``layer`` and ``disk_file`` default to what its labels and the engine
    say: a dead server's). The engine unmounts what is mounted in a layer folder it
    removes (Docker 20.10 does); one that refuses gets the container stopped and the
    filesystem unmounted first. The filesystem's file is deleted last."""
    import docker.errors

    if disk_file is None and _disk.DISK_LABEL in (container.labels or {}):
        disk_file = Path(container.labels[_disk.DISK_LABEL])
    if disk_file is not None and layer is None:
        with contextlib.suppress(_disk.DiskRefused, KeyError):
            layer = _disk.layer_dir(container)
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError:
        if disk_file is None:
            raise
        with contextlib.suppress(docker.errors.APIError):
            container.kill()
        with contextlib.suppress(Exception):
            container.client.api.wait(container.id, condition="not-running", timeout=60)
        _disk.detach(layer, None)
        container.remove(force=True)
    finally:
        if disk_file is not None:
            _disk.detach(layer, disk_file)


def _docker_cli() -> str:
    found = shutil.which("docker")
    if found is None:
        raise ExecutionError("tasks with an image of their own need the docker CLI on PATH")
    return found


@dataclass(frozen=True, slots=True)
class ContainerLimits:
    """What one session's container may use: the smaller of the task's request and the
    server's session limit for each (None: no limit)."""

    memory_mb: int | None
    cpus: float | None
    pids: int | None
    disk_mb: int | None

    @classmethod
    def of(cls, settings: ImageSettings, server: SessionLimits) -> ContainerLimits:
        def smaller(a: float | None, b: float | None) -> float | None:
            return b if a is None else a if b is None else min(a, b)

        mem = smaller(settings.memory_mb, server.memory_bytes / _MiB if server.memory_bytes else None)
        disk = smaller(settings.storage_mb, server.disk_bytes / _MiB if server.disk_bytes else None)
        return cls(
            memory_mb=None if mem is None else int(mem),
            cpus=smaller(settings.cpus, server.cpus),
            pids=server.pids,
            disk_mb=None if disk is None else int(disk),
        )

    def run_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.memory_mb is not None:
            kw["mem_limit"] = kw["memswap_limit"] = f"{self.memory_mb}m"
        if self.cpus is not None:
            kw["nano_cpus"] = int(self.cpus * 1e9)
        if self.pids is not None:
            kw["pids_limit"] = self.pids
        return kw


class ContainerBox:
    """A started container of ``image`` for one session. Made in a thread (it blocks)."""

    def __init__(
        self,
        client: Any,
        image: str,
        settings: ImageSettings,
        limits: ContainerLimits,
        task_id: str,
        *,
        owner: str | Mapping[str, str] = "",
        service_tags: dict[str, str] | None = None,
    ) -> None:
        self.client = client
        self.image = image
        self.task_id = task_id
        self.limits = limits
        self.network = settings.network
        self._groups: set[int] = set()
        self._docker = _docker_cli()
        self.disk_note = ""
        self._layer: Path | None = None  # the layer folder its own filesystem is mounted on
        self._disk_file: Path | None = None
        # the owner's labels (``_owner.py``; a bare string: the owner label alone)
        labels = {LABEL: task_id, **({OWNER_LABEL: owner} if isinstance(owner, str) else owner)}
        compose = settings.compose
        kw = {
            "command": ["sleep", "infinity"],
            "entrypoint": [],
            "detach": True,
            "init": True,
            "labels": labels,
            "security_opt": ["no-new-privileges"],
            "environment": {**settings.env, **dict(compose.main_env if compose else ())},
            **limits.run_kwargs(),
        }
        if settings.workdir:
            kw["working_dir"] = settings.workdir
        self.services: SessionServices | None = None
        if compose is not None:  # the session's own network, its services on it (_services.py)
            self.services = SessionServices(client, compose, service_tags or {}, labels, limits.run_kwargs())
            kw["network"] = self.services.name
            kw["networking_config"] = self.services.endpoint()
        elif settings.network:  # a bridge of its own, the host firewalled off it (_network.py)
            from openenv.containers._network import task_network_id

            kw["network"] = task_network_id(client)
        else:
            kw["network_mode"] = "none"
        try:
            self.container = self._run(kw)
            if compose is not None and settings.network:
                from openenv.containers._network import task_network_id

                client.networks.get(task_network_id(client)).connect(self.container)
        except BaseException:
            if self.services is not None:
                self.services.close()
            raise
        self.id: str = self.container.id
        self.inner_workdir: str = self.container.attrs["Config"].get("WorkingDir") or "/"
        self.closed = False
        if settings.healthcheck is not None:  # the task's own readiness check (_compose_health.py)
            try:
                wait_task_ready(self._check_once, settings.healthcheck)
            except BaseException as exc:
                self.close()
                if isinstance(exc, RuntimeError):
                    raise ExecutionError(f"task {task_id!r}: {exc}") from None
                raise

    def _check_once(self, command: str, timeout_s: float) -> tuple[int, str]:
        """``sh -c command`` in the container: its exit code and output (-1 past ``timeout_s``)."""
        argv = [self._docker, "exec", self.id, "sh", "-c", command]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return -1, f"still running after its timeout_sec ({timeout_s:g} s)"
        return done.returncode, (done.stdout + done.stderr).decode(errors="replace")

    def _run(self, kw: dict[str, Any]) -> Any:
        """Create and start the container; with a disk limit, the engine's own size where
        its storage driver has one, else the writable layer on a filesystem of its own
        (``_disk.py``), else none, said in ``disk_note``."""
        import docker.errors

        if self.limits.disk_mb is None:
            return self.client.containers.run(self.image, **kw)
        engine = _engine_id(self.client)
        if engine not in _disk_refused:
            try:
                return self.client.containers.run(
                    self.image, storage_opt={"size": f"{self.limits.disk_mb}M"}, **kw
                )
            except docker.errors.APIError as exc:
                if exc.status_code not in (400, 500) or "storage" not in str(exc).lower():
                    raise
                with _disk_guard:
                    _disk_refused[engine] = " ".join(str(exc.explanation or exc).split())[:200]
        why = _disk.usable()
        if why:
            self.disk_note = f"not enforced: {why} (the engine: {_disk_refused.get(engine, '')})"
            return self.client.containers.run(self.image, **kw)
        path = _disk.disk_file(secrets.token_hex(6))
        container = self.client.containers.create(
            self.image, **{**kw, "labels": {**kw["labels"], _disk.DISK_LABEL: str(path)}}
        )
        try:
            try:
                self._layer = _disk.attach(container, path, self.limits.disk_mb)
                self._disk_file = path
            except (OSError, subprocess.SubprocessError) as exc:  # the session runs without it
                self.disk_note = f"not enforced: {exc}"
            container.start()
            if self._layer is not None and not _disk.holds(self._layer):
                _disk.detach(self._layer, self._disk_file)
                self._layer = self._disk_file = None
                self.disk_note = "not enforced: the engine does not see this machine's mounts"
        except BaseException:
            _remove(container, self._layer, self._disk_file)
            raise
        return container

    # ---- what the shell and the env read -----------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {
            "level": "container",
            "image": self.image,
            "container": self.id[:12],
            "network": (_task_bridge() if self.network else "none")
            + (f" + session network ({len(self.services.containers)} services)" if self.services else ""),
            "memory_mb": self.limits.memory_mb,
            "cpus": self.limits.cpus,
            "pids": self.limits.pids,
            "disk_mb": self.limits.disk_mb,
            **({"disk": self.disk_note} if self.disk_note else {}),
        }

    def repin(self) -> None:
        """Nothing to do: the engine places the container's processes."""

    def _exec_argv(
        self, argv: Sequence[str], *, tty: bool, cwd: str | None, env: Mapping[str, str] | None
    ) -> list[str]:
        cmd = [self._docker, "exec", "-i"] + (["-t"] if tty else [])
        if cwd:
            cmd += ["-w", cwd]
        for key, value in (env or {}).items():
            cmd += ["-e", f"{key}={value}"]
        return [*cmd, self.id, *argv]

    def popen(self, argv: Sequence[str], **kw: Any) -> subprocess.Popen[bytes]:
        """``argv`` in the container, started now (it forks: call it off the event loop, as
        the terminal's shell does); with ``ctty`` (a terminal as stdin) under ``-t``."""
        ctty = kw.pop("ctty", False)
        cmd = self._exec_argv(argv, tty=ctty, cwd=kw.pop("cwd", None), env=kw.pop("env", None))
        proc = subprocess.Popen(cmd, start_new_session=True, **kw)
        self._groups.add(proc.pid)
        return proc

    async def spawn(self, argv: Sequence[str], **kw: Any) -> Process:
        """``popen`` for asyncio (``arun``'s pipes), forked off the event loop as a
        sandbox's (``openenv.sandbox._offloop``)."""
        return await spawn_off_loop(functools.partial(self.popen, argv, **kw), self._groups)

    async def arun(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        output_limit: int = 1 << 20,
    ) -> Completed:
        """Run ``argv`` in the container to completion. Past ``timeout_s`` the client is
        killed and so is every process in the container (``kill``): the engine gives
        no other way to reach the one exec'd process."""
        spawn = functools.partial(self.spawn, argv, cwd=cwd, env=env)
        done = await spawn_and_run(
            spawn, self._groups, input=input, timeout_s=timeout_s, output_limit=output_limit
        )
        if done.timed_out:
            await asyncio.to_thread(self.kill)
        return done

    # ---- ending ------------------------------------------------------------------------
    def stop(self) -> None:
        """Kill every process in the container and leave it stopped (files kept)."""
        import docker.errors

        for pgid in list(self._groups):
            kill_group(pgid)
        self._groups.clear()
        with contextlib.suppress(docker.errors.APIError):
            self.container.kill()
        self.client.api.wait(self.id, condition="not-running", timeout=60)

    def kill(self) -> None:
        """Every process in the container dies; it starts again on the same files."""
        self.stop()
        self.container.start()

    def close(self) -> None:
        """Remove the container. Idempotent."""
        if self.closed:
            return
        self.closed = True
        import docker.errors

        for pgid in list(self._groups):
            kill_group(pgid)
        with contextlib.suppress(docker.errors.APIError):
            _remove(self.container, self._layer, self._disk_file)
        if self.services is not None:
            self.services.close()
