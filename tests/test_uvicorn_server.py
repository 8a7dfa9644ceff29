"""``openenv._uvicorn_server.PromptServer``: a prompt stop that keeps uvicorn's graceful one.

Its speed (a stop without uvicorn's fixed pauses) is not asserted here; what is: a stop
with an idle keep-alive connection open closes it and runs the app's shutdown, a request
in flight still gets its answer (uvicorn's own shutdown takes over), and a stop signal
stops the server.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from openenv.server import serve_in_background

ROOT = Path(__file__).resolve().parents[1]


class App:
    """A tiny ASGI app: ``/`` answers at once, ``/slow`` once ``release`` is set; the
    lifespan's shutdown is recorded."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.shut_down = False

    async def __call__(self, scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def]
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    self.shut_down = True
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["path"] == "/slow":
            self.entered.set()
            await asyncio.to_thread(self.release.wait, 10)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


def test_a_stop_with_an_idle_keep_alive_connection_closes_it_and_shuts_the_app_down() -> None:
    app = App()
    server = serve_in_background(app)
    with httpx.Client() as client:
        assert client.get(server.url).text == "ok"  # the connection stays in the pool
        server.stop()
        assert app.shut_down
        assert not server._thread.is_alive()
        with pytest.raises(httpx.TransportError):
            client.get(server.url, timeout=2)


def test_a_request_in_flight_at_the_stop_still_gets_its_answer() -> None:
    app = App()
    server = serve_in_background(app)
    answers: list[str] = []
    caller = threading.Thread(target=lambda: answers.append(httpx.get(f"{server.url}/slow", timeout=10).text))
    caller.start()
    assert app.entered.wait(10)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    stopper.join(0.3)
    assert stopper.is_alive()  # the stop waits for the request (uvicorn's graceful shutdown)
    app.release.set()
    caller.join(10)
    stopper.join(10)
    assert answers == ["ok"]
    assert app.shut_down


def test_a_stop_signal_ends_openenv_serve_with_status_0() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "serve", "tests._envs:PidEnv", "--host", "127.0.0.1",
         "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "openenv: serving" in line, line
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
