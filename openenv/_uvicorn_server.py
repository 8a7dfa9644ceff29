"""``PromptServer``: uvicorn's server without its two fixed pauses on the way out.

uvicorn's main loop looks at ``should_exit`` every 0.1 s, so a stop waits up to a tick
before anything happens; its shutdown then sleeps 0.1 s for open connections to see it,
even with none open. Every in-process server here (``serve_in_background``, the capture
proxy and its session endpoints, the MCP tool bridge) and ``openenv serve`` stop many
times in a run (a test, an eval, a rollout each start and stop some), and a stop is a
wait of its caller: about 0.15 s each.

``PromptServer`` is uvicorn's with that wait taken out:

* ``stop_soon()`` (from any thread) and a stop signal wake the main loop at once
  instead of at its next tick; the tick itself (the date header, ``should_exit``) is
  uvicorn's, every 0.1 s as before;
* a shutdown with no connection but idle HTTP ones (keep-alive, between requests) and
  no task closes the listening sockets and those connections, waits for them to go (in
  5 ms steps, within the graceful period) and runs the app's shutdown, without the
  pause; with a request in flight, a WebSocket or a task, uvicorn's own shutdown runs
  unchanged (pause, graceful period, cancel).

Start-up, serving and the lifespan are uvicorn's. Only imported where uvicorn is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from types import FrameType

import uvicorn

__all__ = ["TICK_S", "PromptServer"]

log = logging.getLogger("uvicorn.error")  # where uvicorn says it is shutting down

#: uvicorn's main-loop tick.
TICK_S = 0.1
#: How often a prompt shutdown looks whether the connections it closed are gone.
_POLL_S = 0.005
_NO_CYCLE = object()


def _idle_http(connection: object) -> bool:
    """An HTTP connection between requests (uvicorn's shutdown closes these at once);
    WebSocket protocols have no request cycle."""
    cycle = getattr(connection, "cycle", _NO_CYCLE)
    return cycle is None or (cycle is not _NO_CYCLE and bool(getattr(cycle, "response_complete", False)))


class PromptServer(uvicorn.Server):
    """uvicorn's ``Server``, stopped without its fixed pauses (see the module)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):  # uvicorn's tick: the date header, should_exit
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), TICK_S)

    def stop_soon(self) -> None:
        """``should_exit``, and the main loop woken to see it now (from any thread)."""
        self.should_exit = True
        self._wake_up()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._wake_up()

    def _wake_up(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connection from here on
        held = list(self.server_state.connections)
        if self.server_state.tasks or not all(_idle_http(c) for c in held):
            await super().shutdown(sockets)  # uvicorn's own, pause included
            return
        log.info("Shutting down")
        for sock in sockets or []:
            sock.close()
        for connection in held:
            connection.shutdown()  # idle: its transport closes now
        loop = asyncio.get_running_loop()
        grace = self.config.timeout_graceful_shutdown
        deadline = loop.time() + (grace if grace is not None else float("inf"))
        # uvicorn's connection set signals nothing when it empties: look every 5 ms
        while self.server_state.connections and not self.force_exit and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_POLL_S)
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()
