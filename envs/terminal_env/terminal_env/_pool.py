"""Warm shells: sandboxes with a started shell, made ahead so a reset need not wait.

One pool per server process (in ``TerminalResources``), used from the server's event
loop. ``take`` hands out a ready shell (or makes one if none is ready) and starts
making replacements in the background; a shell is never handed out twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from openenv.sandbox import Sandbox, SandboxConfig
from openenv.sandbox._sandbox import reclaim

from ._ptyio import off_loop
from ._shell import PtyShell

log = logging.getLogger("terminal_env")


def reclaim_leftovers(config: SandboxConfig) -> None:
    """At server start (off the loop): give back the sandboxes a server killed with
    SIGKILL left (its sessions' and its pool's), those of uids no live process holds."""
    try:
        left = reclaim(config)
    except OSError:
        log.exception("terminal env: reclaiming leftover sandboxes failed")
    else:
        if left:
            log.warning("terminal env: reclaimed the leftover sandboxes of %d uids", len(left))


async def new_shell(config: SandboxConfig) -> PtyShell:
    """A new sandbox with a started shell in it."""
    box = await off_loop(Sandbox, config)
    shell = PtyShell(box)
    try:
        await shell.start()
    except BaseException:
        await close_shell(shell)
        raise
    return shell


async def close_shell(shell: PtyShell) -> None:
    """Stop the shell and remove its sandbox (processes, directory, uid)."""
    await shell.close()
    await off_loop(shell.sandbox.close)


class ShellPool:
    """Up to ``size`` ready shells for ``config``; ``size`` 0 makes every shell on demand."""

    def __init__(self, config: SandboxConfig, size: int) -> None:
        self.config = config
        self.size = size
        self._ready: deque[PtyShell] = deque()
        self._filling: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def take(self) -> PtyShell:
        """A ready shell if there is one, else a new one; refills in the background."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # shells read their terminal on the loop that made them
            self._ready.clear()
            self._filling.clear()
            self._loop = loop
        shell = None
        while self._ready and shell is None:
            candidate = self._ready.popleft()
            if candidate.alive:
                shell = candidate
            else:
                await close_shell(candidate)
        if shell is not None:
            shell.sandbox.repin()  # made ahead of time: spread by today's load
        self._refill()
        return shell if shell is not None else await new_shell(self.config)

    def _refill(self) -> None:
        for _ in range(self.size - len(self._ready) - len(self._filling)):
            task = asyncio.ensure_future(self._fill())
            self._filling.add(task)
            task.add_done_callback(self._filling.discard)

    async def _fill(self) -> None:
        with contextlib.suppress(Exception):  # a failed warm-up shows again at the next take
            self._ready.append(await new_shell(self.config))

    async def aclose(self) -> None:
        for task in list(self._filling):
            task.cancel()
        await asyncio.gather(*self._filling, return_exceptions=True)
        while self._ready:
            await close_shell(self._ready.popleft())

    def close_now(self) -> None:
        """At process shutdown (off the loop): kill and remove what is still pooled."""
        while self._ready:
            shell = self._ready.popleft()
            shell.sandbox.close()
