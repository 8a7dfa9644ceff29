"""``CaptureServer``: the capture proxy on a port, in a background thread of this process.

In-process so a rollout loop can mint sessions and read graphs from the live
``registry`` without a round trip; ``url`` is where agents point their SDKs.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

from .._exceptions import ServeFailed
from .._keepalive import SERVER_KEEP_ALIVE_S
from ._app import create_app
from ._endpoint import SessionEndpoint
from ._sessions import SessionRegistry


class CaptureServer:
    """The proxy, served by uvicorn on ``host:port`` (port 0: a free one) until ``stop``."""

    def __init__(
        self,
        *,
        llm_url: str,
        model: str = "",
        port: int = 8100,
        host: str = "127.0.0.1",
        api_key: str | None = None,
        capture_level: str | None = None,
        admin_key: str | None = None,
    ) -> None:
        self.app = create_app(
            llm_url=llm_url, model=model, api_key=api_key, capture_level=capture_level, admin_key=admin_key
        )
        self.host, self.port, self.admin_key = host, port, admin_key
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def registry(self) -> SessionRegistry:
        return self.app.state.capture.registry  # type: ignore[no-any-return]

    @property
    def capture_level(self) -> str | None:
        """The backend's level once probed (the first ``POST /sessions`` probes it)."""
        return self.app.state.capture.level  # type: ignore[no-any-return]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> CaptureServer:
        """Bind and serve; returns once the port answers.

        Raises:
            ServeFailed: the port is taken, or the server did not come up in ``timeout_s``.
        """
        import uvicorn

        from .._uvicorn_server import PromptServer

        # proto named: asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP,
        # and accepted ones inherit it. With proto 0, a reply's head and body (two writes)
        # met Nagle and the client's delayed ACK: about 40 ms a call on loopback.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise ServeFailed(f"capture port {self.host}:{self.port} is taken ({exc.strerror})") from exc
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="on", timeout_keep_alive=SERVER_KEEP_ALIVE_S
        )
        self._server = PromptServer(config)
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(sock),), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServeFailed(f"the capture proxy did not start on {self.url}")
            time.sleep(0.02)
        return self

    async def _serve(self, sock: socket.socket) -> None:
        self._loop = asyncio.get_running_loop()
        await self._server.serve(sockets=[sock])

    def open_endpoint(self, session_id: str, path: str) -> SessionEndpoint:
        """Serve ``session_id``'s own endpoint on the unix socket ``path`` (see
        ``SessionEndpoint``): the model routes only, every call that session's.

        Raises:
            ServeFailed: the proxy is not running, the session is unknown, or the socket
                cannot be bound.
        """
        if self._loop is None or self._server is None or not self._server.started:
            raise ServeFailed("start the capture proxy before opening a session endpoint")
        if self.registry.get(session_id) is None:
            raise ServeFailed(f"unknown capture session {session_id!r}")
        try:
            return SessionEndpoint.open(self.app, path, session_id, self._loop)
        except OSError as exc:
            raise ServeFailed(f"session endpoint on {path}: {exc}") from exc

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop_soon()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> CaptureServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
