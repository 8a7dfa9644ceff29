"""``serve_in_background``: serve an app on a thread of this process (examples, notebooks,
tests), on loopback and a free port, with the production uvicorn stack.

    with serve_in_background(create_app(MyEnv)) as server:
        with EnvClient(server.url, MODELS) as env:
            env.reset()
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

from ._serve import uvicorn_options
from ._settings import ServerSettings


class BackgroundServer:
    """One uvicorn server running ``app`` on a daemon thread; ``url`` once started."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", start_timeout_s: float = 10.0) -> None:
        import uvicorn

        from .._uvicorn_server import PromptServer

        # proto named: asyncio sets TCP_NODELAY only on proto TCP sockets (see capture._server)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind((host, 0))
        options = uvicorn_options(ServerSettings(host=host))
        options.update(port=self._sock.getsockname()[1], log_level="warning")
        self._server = PromptServer(uvicorn.Config(app, **options))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="openenv-background", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + start_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the app did not start within {start_timeout_s:g} s (see its log)")
            time.sleep(0.01)
        self.url = f"http://{host}:{self._sock.getsockname()[1]}"

    def stop(self, timeout_s: float = 10.0) -> None:
        """Shut down gracefully (the app's lifespan included); safe to call twice."""
        self._server.stop_soon()
        self._thread.join(timeout_s)
        self._sock.close()

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def serve_in_background(app: Any, **kwargs: Any) -> BackgroundServer:
    """Start ``app`` on a thread; returns once it answers. ``stop()`` (or ``with``) ends it."""
    return BackgroundServer(app, **kwargs)
