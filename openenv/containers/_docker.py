"""Run env images as Docker containers through the ``docker`` SDK.

Every container is labelled (``openenv.managed``, ``openenv.owner`` = host:pid,
``openenv.image``), auto-removed when it stops, published on 127.0.0.1 only, put on a
network where containers cannot reach each other (``_network``), run under Docker's
init (orphans reaped), its server answering only loopback names and addresses in
``Host`` (``OPENENV_ALLOWED_HOSTS``), and optionally CPU/memory limited. The labels let
``_docker_admin.gc`` remove the containers whose owner process is gone (a crashed
client), so nothing is orphaned for long; listing and stopping them is there too.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from .._exceptions import ProviderError, StartupFailed
from .._extras import require
from ._base import CONTAINER_PORT, Provider, ReplicaBase
from ._network import ISOLATED_NETWORK, network_id

LABEL_MANAGED = "openenv.managed"
LABEL_OWNER = "openenv.owner"
LABEL_IMAGE = "openenv.image"
#: ``OPENENV_ALLOWED_HOSTS`` of a container's server unless ``env`` sets it: loopback
#: names (addresses always pass), so a request with another name in ``Host`` gets 403.
CONTAINER_ALLOWED_HOSTS = "localhost"
#: The label of the images the terminal env builds for tasks with a Dockerfile of their
#: own (``openenv-task-<id>:<hash>``; its value is the task id): ``gc_images`` removes them.
LABEL_TASK_IMAGE = "openenv.task"

_live: weakref.WeakSet[DockerReplica] = weakref.WeakSet()


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def docker_client() -> Any:
    """A connected ``docker.DockerClient``; ``ProviderError`` if no engine answers."""
    docker = require("docker", extra="docker", feature="running env containers")
    client = None
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        if client is not None:
            client.close()
        raise ProviderError(f"no Docker engine answers ({exc}); is dockerd running?") from None
    return client


@contextlib.contextmanager
def using_client(client: Any = None) -> Iterator[Any]:
    """``client`` as it is, or a new one (``docker_client()``) closed on the way out: a
    client left to the garbage collector leaves its socket to the engine open until
    then, and an unclosed-socket warning wherever that happens."""
    if client is not None:
        yield client
        return
    own = docker_client()
    try:
        yield own
    finally:
        own.close()


class DockerReplica(ReplicaBase):
    """One env container; its output is followed into a ring buffer from the start."""

    def __init__(self, container: Any, base_url: str, output: Any = None) -> None:
        self.container = container
        self._output = output  # an attach stream opened before start; else follow its logs
        self.id: str = container.id
        self.base_url = base_url
        self._lines: deque[str] = deque(maxlen=500)
        self._exited = threading.Event()
        self._stopped = False
        #: Called once when this replica stops (its provider's client bookkeeping).
        self._on_stop: Any = None
        self._follower = threading.Thread(
            target=self._follow, name=f"openenv-logs-{self.id[:12]}", daemon=True
        )
        self._follower.start()
        _live.add(self)

    def _follow(self) -> None:
        # Logs are read as they come, so they survive auto-removal of a dead container.
        output = self._output
        try:
            pending = ""
            if output is None:
                output = self.container.logs(stream=True, follow=True)
            for chunk in output:
                pending += chunk.decode(errors="replace")
                *lines, pending = pending.split("\n")
                self._lines.extend(lines)
            if pending:
                self._lines.append(pending)
        except Exception:
            pass
        finally:
            # The stream's socket to the engine, closed here rather than by the GC.
            with contextlib.suppress(Exception):
                getattr(output, "close", lambda: None)()
            self._exited.set()

    def alive(self) -> bool:
        if self._exited.is_set():
            return False
        try:
            self.container.reload()
        except Exception:
            return False
        return bool(self.container.status in ("created", "running"))

    def logs(self, tail: int = 50) -> str:
        if not self._exited.is_set():
            self._exited.wait(0.2)  # let the follower catch up with a dying container
        return "\n".join(list(self._lines)[-tail:])

    def detach(self) -> None:
        """Leave the container running when this process exits (no stop at exit)."""
        _live.discard(self)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        _live.discard(self)
        with contextlib.suppress(Exception):
            self.container.stop(timeout=5)
        with contextlib.suppress(Exception):  # auto-remove normally does this; make sure
            self.container.remove(force=True)
        with contextlib.suppress(Exception):  # auto-removal runs after stop returns: wait it out
            self.container.wait(condition="removed", timeout=10)  # (gone already: 404, ignored)
        on_stop, self._on_stop = self._on_stop, None
        if on_stop is not None:
            on_stop()


def container_stem(image: str) -> str:
    """``openenv-echo`` for the image ``openenv-echo:latest`` (or ``echo``); a container's
    name is this plus a random suffix (``openenv-echo-1a2b3c4d``)."""
    base = image.split("/")[-1].split(":")[0]
    return base if base.startswith("openenv-") else f"openenv-{base}"


class DockerProvider(Provider):
    """Start containers of one env image.

    Args:
        image: the image (local or pullable).
        env: environment variables for the server (e.g. ``OPENENV_MAX_SESSIONS``;
            ``OPENENV_ALLOWED_HOSTS`` here replaces the default, loopback names only).
        cpus: CPU limit, e.g. ``1.5``.
        memory: memory limit, e.g. ``"512m"``.
        start_timeout_s: how long to wait for ``/health``.
        labels: extra labels.
        client: a ``docker.DockerClient`` (default: from the environment).
        network: the Docker network (default ``openenv-isolated``: a bridge on which
            containers cannot reach each other, made when missing). Another name must
            exist; ``"bridge"`` is Docker's default, where every container reaches
            every other's server.
    """

    def __init__(
        self,
        image: str,
        *,
        env: Mapping[str, str] | None = None,
        cpus: float | None = None,
        memory: str | None = None,
        start_timeout_s: float = 60.0,
        labels: Mapping[str, str] | None = None,
        client: Any = None,
        network: str = ISOLATED_NETWORK,
    ) -> None:
        self.image = image
        self.network = network
        self.env = dict(env or {})
        self.cpus = cpus
        self.memory = memory
        self.start_timeout_s = start_timeout_s
        self.labels = dict(labels or {})
        self._client = client
        # A client this provider made is closed (its sockets released; it stays usable)
        # whenever none of its replicas is running; one passed in is the caller's.
        self._owns_client = client is None
        self._running = 0
        self._count_lock = threading.Lock()

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def _track(self, replica: DockerReplica) -> None:
        with self._count_lock:
            self._running += 1
        replica._on_stop = self._replica_stopped

    def _replica_stopped(self) -> None:
        with self._count_lock:
            self._running -= 1
            idle = self._running == 0
        if idle and self._owns_client and self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()

    def start(self) -> DockerReplica:
        client = self.client  # the docker SDK (or MissingExtra naming it) first
        import docker.errors

        name = f"{container_stem(self.image)}-{uuid.uuid4().hex[:8]}"
        network = network_id(client, self.network)
        options: dict[str, Any] = {
            "auto_remove": True,
            "name": name,
            "labels": {LABEL_MANAGED: "1", LABEL_OWNER: _owner(), LABEL_IMAGE: self.image, **self.labels},
            "environment": {
                "OPENENV_HOST": "0.0.0.0",
                "OPENENV_PORT": str(CONTAINER_PORT),
                # The server binds 0.0.0.0 in there, so it would answer any Host; it is
                # reached at 127.0.0.1 (addresses and loopback names always pass), so a
                # rebound name (a DNS-rebinding page's) need not.
                "OPENENV_ALLOWED_HOSTS": CONTAINER_ALLOWED_HOSTS,
                **self.env,
            },
            "ports": {f"{CONTAINER_PORT}/tcp": ("127.0.0.1", None)},
            "network": network,
            # Docker's init as PID 1: it reaps orphans (a session's processes whose
            # parent died), whatever the image's entrypoint; zombies would pile up and
            # hold the sandbox uids they belong to.
            "init": True,
        }
        if self.cpus:
            options["nano_cpus"] = int(self.cpus * 1e9)
        if self.memory:
            options["mem_limit"] = self.memory
        try:
            try:
                container = client.containers.create(self.image, **options)
            except docker.errors.ImageNotFound:
                client.images.pull(self.image)
                container = client.containers.create(self.image, **options)
            # Attach before start, as `docker run` does: a container that dies at once is
            # auto-removed, output and all, before its logs could be fetched.
            try:
                output = container.attach(stdout=True, stderr=True, stream=True, logs=True)
            except BaseException:
                with contextlib.suppress(Exception):
                    container.remove(force=True)
                raise
        except docker.errors.ImageNotFound:
            raise ProviderError(f"image {self.image!r} not found; build it with `openenv build`") from None
        except docker.errors.APIError as exc:
            raise ProviderError(f"docker could not start {self.image!r}: {exc.explanation or exc}") from None
        replica = DockerReplica(container, "", output)
        self._track(replica)
        try:
            try:
                container.start()
            except docker.errors.APIError as exc:
                raise ProviderError(
                    f"docker could not start {self.image!r}: {exc.explanation or exc}"
                ) from None
            replica.base_url = f"http://127.0.0.1:{self._host_port(container, replica)}"
        except BaseException:
            replica.stop()
            raise
        replica.wait_ready(self.start_timeout_s, f"container {name} ({self.image})")
        return replica

    def _host_port(self, container: Any, replica: DockerReplica) -> int:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                container.reload()
            except Exception:
                break  # gone already: it exited and was auto-removed
            bindings = (container.attrs.get("NetworkSettings", {}).get("Ports") or {}).get(
                f"{CONTAINER_PORT}/tcp"
            )
            if bindings:
                return int(bindings[0]["HostPort"])
            if container.status not in ("created", "running"):
                break
            time.sleep(0.02)
        raise StartupFailed(
            f"container {container.name} published no port for {CONTAINER_PORT}", replica.logs()
        )


@atexit.register
def _stop_live_replicas() -> None:
    for replica in list(_live):
        replica.stop()
