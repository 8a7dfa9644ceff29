"""The project's containers on the engine, as the CLI manages them: ``containers``
(``openenv ps``), ``stop_container`` (``openenv stop``), ``gc`` and ``gc_images``
(``openenv gc``). Starting them is ``_docker.DockerProvider``'s; both use its client
and its labels.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
from typing import Any

from .._exceptions import ProviderError
from ._base import CONTAINER_PORT
from ._docker import LABEL_IMAGE, LABEL_MANAGED, LABEL_OWNER, LABEL_TASK_IMAGE, using_client

__all__ = ["ContainerInfo", "containers", "gc", "gc_images", "pid_alive", "stop_container"]


def gc(*, all_owners: bool = False, client: Any = None) -> list[str]:
    """Remove labelled containers whose owner process is gone; returns their names.

    With ``all_owners`` every ``openenv.managed`` container is removed.
    """
    with using_client(client) as client:
        host = socket.gethostname()
        removed: list[str] = []
        # ignore_removed: a container removed between the listing and its inspection
        # (auto-removal of a stopped replica) is skipped instead of raising NotFound.
        managed = client.containers.list(
            all=True, filters={"label": f"{LABEL_MANAGED}=1"}, ignore_removed=True
        )
        for container in managed:
            owner = container.labels.get(LABEL_OWNER, "")
            owner_host, _, pid = owner.rpartition(":")
            if not all_owners and owner_host == host and pid.isdigit() and pid_alive(int(pid)):
                continue
            if not all_owners and owner_host != host:
                continue  # another machine's client: not ours to judge
            try:
                container.remove(force=True)
                removed.append(container.name)
            except Exception:
                pass
        return removed


def gc_images(*, task: str | None = None, client: Any = None) -> list[str]:
    """Remove the task images this project built (label ``openenv.task``) that no
    container uses, running or not; returns their names (tags, or IDs of untagged ones).
    ``task``: only that task's (its id, the label's value).

    They are a cache: a task whose image is gone builds it again at its next reset.
    An image in use, or one another image is built on, is kept.
    """
    with using_client(client) as client:  # the docker SDK (or MissingExtra naming it) first
        import docker.errors

        used = {c.attrs.get("Image") for c in client.containers.list(all=True, ignore_removed=True)}
        removed: list[str] = []
        label = LABEL_TASK_IMAGE if task is None else f"{LABEL_TASK_IMAGE}={task}"
        for image in client.images.list(filters={"label": label}):
            if image.id in used:
                continue
            for name in image.tags or [image.id]:
                try:
                    client.images.remove(name)  # never forced: in use since the listing fails
                except docker.errors.APIError:
                    continue
                removed.append(name)
        return removed


@dataclasses.dataclass(frozen=True)
class ContainerInfo:
    """One project container, as ``openenv ps`` lists it."""

    name: str
    image: str
    url: str | None
    status: str
    owner: str


def _url_of(container: Any) -> str | None:
    ports = (container.attrs.get("NetworkSettings") or {}).get("Ports") or {}
    for binding in ports.get(f"{CONTAINER_PORT}/tcp") or []:
        if binding.get("HostPort"):
            host = binding.get("HostIp") or "127.0.0.1"
            return f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{binding['HostPort']}"
    return None


def containers(*, client: Any = None) -> list[ContainerInfo]:
    """The project's containers (label ``openenv.managed=1``) on the engine, by name."""
    with using_client(client) as client:
        managed = client.containers.list(
            all=True, filters={"label": f"{LABEL_MANAGED}=1"}, ignore_removed=True
        )
        return sorted(
            (
                ContainerInfo(
                    name=c.name,
                    image=c.labels.get(LABEL_IMAGE) or (c.image.tags[0] if c.image and c.image.tags else "?"),
                    url=_url_of(c),
                    status=c.status,
                    owner=c.labels.get(LABEL_OWNER, ""),
                )
                for c in managed
            ),
            key=lambda info: info.name,
        )


def stop_container(name: str, *, timeout_s: float = 10.0, client: Any = None) -> None:
    """Stop and remove one project container by name (or ID); ``ProviderError`` when no
    project container has that name (other containers on the engine are never touched)."""
    with using_client(client) as client:  # the docker SDK (or MissingExtra naming it) first
        import docker.errors

        try:
            container = client.containers.get(name)
        except docker.errors.NotFound:
            raise ProviderError(f"no container named {name!r}; `openenv ps` lists the project's") from None
        if container.labels.get(LABEL_MANAGED) != "1":
            raise ProviderError(f"container {name!r} is not an openenv container; not stopping it")
        try:
            container.stop(timeout=int(timeout_s))
        except docker.errors.NotFound:
            return  # it stopped and was auto-removed meanwhile
        except docker.errors.APIError as exc:
            raise ProviderError(f"docker could not stop {name!r}: {exc.explanation or exc}") from None
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            container.remove(force=True)  # not auto-removed (e.g. started by someone else's tool)


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` runs here (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
