"""Helpers for the browser env tests: a real server in-process, and scripted policies.

``BrowserServer`` runs ``create_app(BrowserEnv)`` under uvicorn (uvloop, as
``openenv serve`` does) in a thread whose event loop the tests can reach: the env's
Playwright objects live on that loop, so a test that pokes a session's page (to hang
or crash it, or to set a cookie) runs a coroutine there with ``on_loop``.
The scripted solutions are the package's own (``browser_env.solutions``).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvicorn
from browser_env import BrowserEnv

from openenv.server import ServerSettings, create_app
from openenv.server._serve import uvicorn_options

CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="no Chromium at /usr/bin/chromium: run scripts/setup.d/30-browser.sh (apt-get install chromium)",
)


class BrowserServer:
    """A live server for ``BrowserEnv`` on 127.0.0.1 with its loop exposed."""

    def __init__(self, **env_kwargs: Any) -> None:
        settings = ServerSettings.from_env(env_kwargs=env_kwargs, idle_timeout_s=0, call_timeout_s=60.0)
        self.app = create_app(BrowserEnv, settings=settings)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        options = uvicorn_options(settings)
        options.update(host="127.0.0.1", port=self.port, timeout_graceful_shutdown=3)
        self.server = uvicorn.Server(uvicorn.Config(self.app, **options))
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, name="browser-test-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        import uvloop

        self.loop = uvloop.new_event_loop()
        self.loop.run_until_complete(self.server.serve(sockets=[self._sock]))

    def start(self, timeout_s: float = 30.0) -> BrowserServer:
        self._sock.listen(64)
        self.thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("browser test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self._sock.close()

    def envs(self) -> list[Any]:
        """The live sessions' env objects."""
        return [s._handle.env for s in list(self.app.state.sessions.sessions.values())]

    def env_of(self, episode_id: str) -> Any:
        """The env whose current episode has this id."""
        for env in self.envs():
            if env._state.episode_id == episode_id:
                return env
        raise LookupError(f"no session runs episode {episode_id!r}")

    def on_loop(self, make: Callable[[], Coroutine[Any, Any, Any]], timeout_s: float = 10.0) -> Any:
        """Run a coroutine on the server's loop (where the env's Playwright objects live)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(timeout_s)
