"""Shared helpers for the terminal env tests (imported by plain name)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from terminal_env import RunAction, TerminalEnv, TerminalObservation

from openenv.containers import LocalProcessProvider
from openenv.sandbox._bwrap import bwrap_works

ROOT = os.geteuid() == 0
#: Why bubblewrap cannot run here ("" when it can); probed as a sandbox uid.
BWRAP_WHY = bwrap_works(190_000 + 4096 if ROOT else None)
#: The sandbox levels this machine supports: always "none"; "strict" with bubblewrap.
LEVELS = ["none"] + ([] if BWRAP_WHY else ["strict"])


def run(command: str, **kw: Any) -> RunAction:
    return RunAction(command=command, **kw)


@asynccontextmanager
async def terminal(level: str, **kwargs: Any) -> AsyncIterator[TerminalEnv]:
    """A ``TerminalEnv`` at ``level`` with a free shell, closed afterwards."""
    env = TerminalEnv(sandbox=level, **kwargs)
    try:
        await env.reset(options={"free_shell": True})
        yield env
    finally:
        await env.close()


async def sh(env: TerminalEnv, command: str, **kw: Any) -> TerminalObservation:
    return await env.step(run(command, **kw))


@contextmanager
def served(level: str, **env: str) -> Iterator[Any]:
    """``openenv serve terminal`` as a real process at ``level``; yields the replica."""
    provider = LocalProcessProvider("terminal", env={"OPENENV_SANDBOX": level, **env}, start_timeout_s=60)
    replica = provider.start()
    try:
        yield replica
    finally:
        replica.stop()
