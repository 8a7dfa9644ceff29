"""Shells for tasks with an image of their own: the image built once, a container per session.

One ``TaskImages`` per server process (in ``TerminalResources``). The Docker client is
made on the first such task, so a server whose tasks need no image never asks for an
engine. Up to ``pool_size`` started containers, each with its shell, wait per image
(and limits): a reset takes one and another is made in the background, so only the
first session of a task waits for a container to start. At most ``max(pool_size, 4)``
wait in all: those of the images used least recently go first. A container is never handed
out twice. Every container this process made carries its owner labels (``_owner.py``)
and is removed at shutdown, pooled or not; those of a process that died without shutting
down are removed when the next one first asks the engine, and only those: another live
server's containers (another test run, another server on the engine) are never touched,
and one that server removes while the sweep looks is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
from collections import deque
from typing import Any

from openenv._exceptions import ExecutionError, ProviderError
from openenv.sandbox import SessionLimits

from . import _disk
from ._container import ContainerBox, ContainerLimits, _remove
from ._image import base_map, ensure_image, map_from, prebuilt_image
from ._owner import OWNER_LABEL, owner_gone, owner_labels, process_gone
from ._services import remove_networks
from ._shell import PtyShell, ShellDied
from ._tasks import TerminalTask

log = logging.getLogger("terminal_env")


class TaskImages:
    """Builds task images (cached by content) and starts a session's container and shell."""

    def __init__(
        self, limits: SessionLimits, base_images: str | dict[str, str] | None = None, pool_size: int = 1
    ) -> None:
        self.limits = limits
        self.mapping = base_map(base_images)
        self.pool_size = pool_size
        self.max_pooled = max(pool_size, 4)
        self._discarding: set[asyncio.Task[None]] = set()
        self.owner_labels = owner_labels(secrets.token_hex(4))
        self.owner = self.owner_labels[OWNER_LABEL]
        self._client: Any = None
        self._guard = threading.Lock()
        self._ready: dict[tuple[Any, ...], deque[PtyShell]] = {}
        self._filling: dict[tuple[Any, ...], set[asyncio.Task[None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> Any:
        with self._guard:
            if self._client is None:
                from openenv.containers._docker import docker_client

                try:
                    self._client = docker_client()
                except ProviderError as exc:
                    raise ExecutionError(f"tasks with an image of their own need Docker: {exc}") from None
                try:
                    sweep_orphans(self._client)
                except Exception:  # leftovers stay for the next sweep; this server still serves
                    log.exception("terminal env: sweeping the containers of dead servers failed")
            return self._client

    def image(self, task: TerminalTask) -> str:
        """The task's image tag, built if missing (blocks: call it in a thread)."""
        assert task.image is not None
        return ensure_image(
            self.client(),
            task.id,
            task.path / "environment",
            mapping=self.mapping,
            timeout_s=task.image.build_timeout_s,
            prebuilt=task.image.docker_image,
        )

    def service_tags(self, task: TerminalTask) -> dict[str, str]:
        """The images of the task's compose services, built if missing (blocks)."""
        assert task.image is not None
        tags: dict[str, str] = {}
        for service in task.image.compose.services if task.image.compose else ():
            if service.build_dir is None:
                tags[service.name] = prebuilt_image(
                    self.client(), task.id, map_from(service.image or "", self.mapping)
                )
                continue
            tags[service.name] = ensure_image(
                self.client(),
                f"{task.id}-{service.name}",
                task.path / "environment" / service.build_dir,
                mapping=self.mapping,
                timeout_s=task.image.build_timeout_s,
            )
        return tags

    def box(self, task: TerminalTask, tag: str | None = None) -> ContainerBox:
        """A started container of the task's image (blocks: call it in a thread)."""
        assert task.image is not None
        tag = tag or self.image(task)
        limits = ContainerLimits.of(task.image, self.limits)
        services = self.service_tags(task)
        return ContainerBox(
            self.client(), tag, task.image, limits, task.id, owner=self.owner_labels, service_tags=services
        )

    async def _start(self, task: TerminalTask, tag: str) -> PtyShell:
        box = await asyncio.to_thread(self.box, task, tag)
        shell = PtyShell(box)
        try:
            await shell.start()
        except ShellDied as exc:
            await _discard(shell)
            raise ExecutionError(f"task {task.id!r}: no bash started in its image ({exc})") from None
        except BaseException:
            await _discard(shell)
            raise
        return shell

    async def new_shell(self, task: TerminalTask) -> PtyShell:
        """A started shell in a fresh container of the task's image: a pooled one if
        one is ready, else one made now; the pool refills in the background."""
        assert task.image is not None
        tag = await asyncio.to_thread(self.image, task)
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # shells read their terminal on the loop that made them
            self._ready.clear()
            self._filling.clear()
            self._loop = loop
        key = (tag, task.id, repr(task.image), ContainerLimits.of(task.image, self.limits))
        ready = self._ready.setdefault(key, deque())
        shell = None
        while ready and shell is None:
            candidate = ready.popleft()
            if candidate.alive:
                shell = candidate
            else:
                await _discard(candidate)
        self._ready.pop(key)  # the most recently used image last: evicted last
        self._ready[key] = ready
        self._refill(key, task, tag)
        self._evict(keep=key)
        return shell if shell is not None else await self._start(task, tag)

    def _evict(self, keep: tuple[Any, ...]) -> None:
        """Past ``max_pooled`` ready containers in all, those of the images used least
        recently go (an eval over many tasks would otherwise keep one per task)."""
        total = sum(len(r) for r in self._ready.values())
        for key, ready in list(self._ready.items()):
            if total <= self.max_pooled:
                break
            if key == keep:
                continue
            while ready and total > self.max_pooled:
                job = asyncio.ensure_future(_discard(ready.popleft()))
                self._discarding.add(job)
                job.add_done_callback(self._discarding.discard)
                total -= 1
            if not ready:
                del self._ready[key]

    def _refill(self, key: tuple[Any, ...], task: TerminalTask, tag: str) -> None:
        filling = self._filling.setdefault(key, set())
        for _ in range(self.pool_size - len(self._ready[key]) - len(filling)):
            job = asyncio.ensure_future(self._fill(key, task, tag))
            filling.add(job)
            job.add_done_callback(filling.discard)

    async def _fill(self, key: tuple[Any, ...], task: TerminalTask, tag: str) -> None:
        try:
            shell = await self._start(task, tag)
        except Exception:  # a failed warm-up shows again at the next take
            return
        ready = self._ready.get(key)
        if ready is None:
            await _discard(shell)  # its image was evicted meanwhile
            return
        ready.append(shell)
        self._evict(keep=key)

    async def aclose(self) -> None:
        """Remove the pooled containers (on the loop that made them)."""
        jobs = [job for filling in self._filling.values() for job in filling]
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, *self._discarding, return_exceptions=True)
        for ready in self._ready.values():
            while ready:
                await _discard(ready.popleft())

    def close(self) -> None:
        """At process shutdown: remove every container this process made, then the client."""
        with self._guard:
            client, self._client = self._client, None
        if client is None:
            return
        try:
            found = client.containers.list(
                all=True, filters={"label": f"{OWNER_LABEL}={self.owner}"}, ignore_removed=True
            )
            for container in found:
                with contextlib.suppress(Exception):
                    _remove(container)
            remove_networks(client, f"{OWNER_LABEL}={self.owner}")
        finally:
            self._ready.clear()
            client.close()


def sweep_orphans(client: Any) -> list[str]:
    """Remove the session containers and networks whose owner is gone for certain
    (``_owner.owner_gone``: a server that died without closing); the container ids removed.
    A container or network removed by its own live server meanwhile is skipped."""
    import docker.errors

    removed = []
    for container in client.containers.list(all=True, filters={"label": OWNER_LABEL}, ignore_removed=True):
        if not owner_gone(container.labels):
            continue
        with contextlib.suppress(docker.errors.APIError):
            _remove(container)
            removed.append(container.id)
    for network in client.networks.list(filters={"label": OWNER_LABEL}):
        if owner_gone(network.attrs.get("Labels") or {}):
            with contextlib.suppress(docker.errors.APIError):
                network.remove()
    _disk.sweep_files(process_gone)  # a layer file made before its container was
    return removed


async def _discard(shell: PtyShell) -> None:
    await shell.close()
    await asyncio.to_thread(shell.sandbox.close)
