"""A test double: a scripted chat server on loopback that answers the OpenAI chat and the
Anthropic Messages routes with replies a test decides, and counts what it was sent.

``ScriptedLLM(script)``: ``script(prompt, n)`` (n: the request's number, from 1) returns
the reply text, or ``(status, text)`` to answer an HTTP error. ``delay_s`` holds every
request that long, so concurrent requests overlap and ``max_in_flight`` shows the bound.
``gate``: requests wait (10 s at most, once) until that many are in flight together, so
an overlap is shown by the requests themselves, not by a delay a loaded host can outlast.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[str, int], "str | tuple[int, str]"]


class ScriptedLLM:
    def __init__(self, script: Script, delay_s: float = 0.0, key: str = "k1", gate: int = 0) -> None:
        self.script, self.delay_s, self.key, self.gate = script, delay_s, key, gate
        self._gate_open = threading.Event()
        self.prompts: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                anthropic = self.path.endswith("/messages")
                key = self.headers.get("x-api-key") or self.headers.get("authorization", "")[7:]
                with double._lock:
                    double.bodies.append(body)
                    double.prompts.append(body["messages"][-1]["content"])
                    n = len(double.prompts)
                    double.in_flight += 1
                    double.max_in_flight = max(double.max_in_flight, double.in_flight)
                    if double.in_flight >= double.gate:
                        double._gate_open.set()
                try:
                    if not double._gate_open.wait(10):  # bounded: the others then pass at once
                        double._gate_open.set()
                    time.sleep(double.delay_s)
                    if key != double.key:
                        self._send(401, {"error": {"message": "bad key", "type": "authentication_error"}})
                        return
                    out = double.script(body["messages"][-1]["content"], n)
                    status, text = out if isinstance(out, tuple) else (200, out)
                    if status != 200:
                        self._send(status, {"error": {"message": text, "type": "scripted"}})
                    elif anthropic:
                        self._send(200, _message(body, text))
                    else:
                        self._send(200, _completion(body, text))
                finally:
                    with double._lock:
                        double.in_flight -= 1

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _message(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
