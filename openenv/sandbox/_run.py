"""Running one contained process to completion: bounded output, a wall clock."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from . import _procs
from ._buffer import HeadTail
from ._offloop import Process

#: A started child: asyncio's (``create_subprocess_exec``) or one started off the loop.
Child = asyncio.subprocess.Process | Process


@dataclass(frozen=True, slots=True)
class Completed:
    """The outcome of ``Sandbox.run``.

    ``exit_code`` is negative for a signal (``-9``: killed) and None when the process
    had to be killed at the wall clock (``timed_out``). Each stream keeps its head
    and tail; ``*_omitted`` counts the bytes dropped between them.
    """

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    duration_s: float
    stdout_omitted: int = 0
    stderr_omitted: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


async def _drain(stream: asyncio.StreamReader | None, buf: HeadTail) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        buf.feed(chunk)


async def run_process(
    proc: Child,
    *,
    input: bytes | None,
    timeout_s: float | None,
    output_limit: int,
) -> Completed:
    """Feed ``input``, collect bounded output, kill the group past ``timeout_s``."""
    start = time.perf_counter()
    out, err = HeadTail(output_limit), HeadTail(output_limit)
    readers = [
        asyncio.ensure_future(_drain(proc.stdout, out)),
        asyncio.ensure_future(_drain(proc.stderr, err)),
    ]
    timed_out = False
    try:
        if input is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(input)
                await asyncio.wait_for(proc.stdin.drain(), timeout_s)
            proc.stdin.close()
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        timed_out = True
        _procs.kill_group(proc.pid)
        await proc.wait()
    finally:
        # A grandchild that keeps the pipes open must not hold us: read briefly, then stop.
        _, pending = await asyncio.wait(readers, timeout=0.5)
        for task in pending:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    return Completed(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.getvalue(),
        stderr=err.getvalue(),
        timed_out=timed_out,
        duration_s=time.perf_counter() - start,
        stdout_omitted=out.omitted,
        stderr_omitted=err.omitted,
    )


async def spawn_and_run(
    spawn: Callable[..., Awaitable[Child]],
    groups: set[int],
    *,
    input: bytes | None,
    timeout_s: float | None,
    output_limit: int,
) -> Completed:
    """``spawn(stdin=, stdout=, stderr=)`` with pipes, ``run_process`` it, then kill its
    group, drop its pid from ``groups`` (the spawner's live process groups) and close
    its pipes. A ``spawn`` cancelled while it starts the child leaves none."""
    proc = await spawn(
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        return await run_process(proc, input=input, timeout_s=timeout_s, output_limit=output_limit)
    finally:
        _procs.kill_group(proc.pid)
        groups.discard(proc.pid)
        if isinstance(proc, Process):
            proc.close()  # a grandchild may hold the pipes open
