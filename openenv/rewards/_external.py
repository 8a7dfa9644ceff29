"""External rewards: a function served over HTTP by another process, and its client.

Wire format (``POST /score``, JSON)::

    request:  {"action": {...}, "observation": {...}}      both as the env's models dump them
    reply:    {"score": 0.75, "components"?: {"name": score, ...}}

``RewardServer(fn)`` serves any ``fn(action, observation) -> float | dict`` (a dict is
``{"score", "components"}``) with the standard library only; ``HttpRubric(url)`` is the
rubric that calls it. Run a server from the shell with
``python -m openenv.rewards module:function --port 9100``.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel

from .._exceptions import ExecutionError
from ._rubric import Rubric

RewardFn = Callable[[Any, Any], float | dict[str, Any]]


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


class HttpRubric(Rubric):
    """Scores by ``POST {url}/score``; the reply's ``components`` join the breakdown."""

    blocking = True

    def __init__(self, url: str, *, timeout_s: float = 30.0, name: str | None = None) -> None:
        super().__init__(name or "external")
        self.url = url.rstrip("/") + "/score" if not url.rstrip("/").endswith("/score") else url
        self.timeout_s = timeout_s
        self.parts: dict[str, float] = {}

    def forward(self, action: Any, observation: Any) -> float:
        body = json.dumps({"action": _dump(action), "observation": _dump(observation)}).encode()
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                reply = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ExecutionError(f"reward endpoint {self.url} failed: {exc}", url=self.url) from None
        if not isinstance(reply, dict) or not isinstance(reply.get("score"), int | float):
            raise ExecutionError(f"reward endpoint {self.url} sent no numeric 'score': {reply!r:.200}")
        self.parts = {str(k): float(v) for k, v in (reply.get("components") or {}).items()}
        return float(reply["score"])

    def components(self) -> dict[str, float]:
        return self.parts


class _AttrDict(dict[str, Any]):
    """A JSON object whose keys also read as attributes (``obs.done``, ``action.message``)."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


class RewardServer:
    """Serve ``fn(action, observation)`` at ``POST /score`` in a background thread.

    ``action`` and ``observation`` reach ``fn`` as dicts whose keys also read as
    attributes. Binds ``127.0.0.1`` by default; ``port=0`` picks a free port
    (``url`` tells which). Use as a context manager, or ``serve_forever()``.
    """

    def __init__(self, fn: RewardFn, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fn = fn
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fn = self.fn

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/score":
                    return self._reply(404, {"detail": "POST /score"})
                try:
                    length = int(self.headers.get("Content-Length", 0))
                    body = json.loads(self.rfile.read(length), object_hook=_AttrDict)
                    result = fn(body["action"], body["observation"])
                except Exception as exc:
                    return self._reply(500, {"detail": f"{type(exc).__name__}: {exc}"})
                reply = result if isinstance(result, dict) else {"score": float(result)}
                self._reply(200, reply)

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> RewardServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="reward-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        print(f"openenv reward server on {self.url}/score", flush=True)
        self._httpd.serve_forever()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> RewardServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
