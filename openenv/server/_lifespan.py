"""What an env app does when it starts and stops, in order."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette

from .._env import EnvClass
from ._mounts import Mounts
from ._runner import EnvRunner
from ._sessions import SessionManager
from ._tasks import preload_tasks


class AppLifespan:
    """Starlette's ``lifespan`` for one env app.

    Start: the env's per-process resources (``EnvRunner.start``), its task set, the
    session reaper, then the plugged-in endpoints. Stop, whatever happened: the
    endpoints, then every session (and with them the runner's resources).
    """

    def __init__(
        self, env_class: EnvClass, runner: EnvRunner, manager: SessionManager, mounts: Mounts
    ) -> None:
        self.env_class = env_class
        self.runner = runner
        self.manager = manager
        self.mounts = mounts

    @contextlib.asynccontextmanager
    async def __call__(self, app: Starlette) -> AsyncIterator[None]:
        await self.runner.start()
        await preload_tasks(self.env_class)
        self.manager.start()
        try:
            async with self.mounts.running():
                yield
        finally:
            await self.manager.shutdown()
