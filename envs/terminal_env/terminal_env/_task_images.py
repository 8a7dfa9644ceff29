"""Shells for tasks with an image of their own: the image built once, a container per session.

One ``TaskImages`` per server process (in ``TerminalResources``). The Docker client is
made on the first such task, so a server whose tasks need no image never asks for an
engine.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from openenv._exceptions import ExecutionError, ProviderError
from openenv.sandbox import SessionLimits

from ._container import ContainerBox, ContainerLimits
from ._image import base_map, ensure_image
from ._shell import PtyShell, ShellDied
from ._tasks import TerminalTask


class TaskImages:
    """Builds task images (cached by content) and starts a session's container and shell."""

    def __init__(self, limits: SessionLimits, base_images: str | dict[str, str] | None = None) -> None:
        self.limits = limits
        self.mapping = base_map(base_images)
        self._client: Any = None
        self._guard = threading.Lock()

    def client(self) -> Any:
        with self._guard:
            if self._client is None:
                from openenv.containers._docker import docker_client

                try:
                    self._client = docker_client()
                except ProviderError as exc:
                    raise ExecutionError(f"tasks with an image of their own need Docker: {exc}") from None
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

    def box(self, task: TerminalTask) -> ContainerBox:
        """A started container of the task's image (blocks: call it in a thread)."""
        assert task.image is not None
        tag = self.image(task)
        limits = ContainerLimits.of(task.image, self.limits)
        return ContainerBox(self.client(), tag, task.image, limits, task.id)

    async def new_shell(self, task: TerminalTask) -> PtyShell:
        box = await asyncio.to_thread(self.box, task)
        shell = PtyShell(box)
        try:
            await shell.start()
        except ShellDied as exc:
            await shell.close()
            await asyncio.to_thread(box.close)
            raise ExecutionError(f"task {task.id!r}: no bash started in its image ({exc})") from None
        except BaseException:
            await shell.close()
            await asyncio.to_thread(box.close)
            raise
        return shell

    def close(self) -> None:
        with self._guard:
            if self._client is not None:
                self._client.close()
                self._client = None
