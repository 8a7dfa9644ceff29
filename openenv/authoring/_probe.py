"""Plain HTTP and WebSocket access to a server under test, every call bounded in time.

Only what upstream's servers understand is sent: no subprotocol, no request ids, so
the same probes run against upstream OpenEnv 0.10 and ours.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from .._exceptions import ProbeError as ProbeError  # re-exported: its home before the one tree


@dataclass(slots=True)
class HttpReply:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            raise ProbeError(f"HTTP {self.status} body is not JSON: {self.body[:200]!r}") from None


def http(
    method: str,
    url: str,
    payload: Any = None,
    *,
    timeout_s: float = 10.0,
    headers: dict[str, str] | None = None,
) -> HttpReply:
    """One request; any status comes back as a reply, a network failure as ``ProbeError``."""
    data = None if payload is None else json.dumps(payload).encode()
    hdrs = {"content-type": "application/json"} if data is not None else {}
    hdrs.update(headers or {})
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return HttpReply(resp.status, resp.read(), {k.lower(): v for k, v in resp.headers.items()})
    except urllib.error.HTTPError as exc:
        return HttpReply(exc.code, exc.read(), {k.lower(): v for k, v in exc.headers.items()})
    except (OSError, urllib.error.URLError) as exc:
        raise ProbeError(f"{method} {url} failed: {exc}") from None


class WsProbe:
    """One plain ``/ws`` connection (upstream's protocol, one session)."""

    def __init__(self, base_url: str, timeout_s: float = 10.0, headers: dict[str, str] | None = None) -> None:
        ws_url = base_url.replace("https://", "wss://", 1).replace("http://", "ws://", 1) + "/ws"
        self.timeout_s = timeout_s
        try:
            self._opener = connect(
                ws_url,
                open_timeout=timeout_s,
                close_timeout=2,
                compression=None,
                max_size=64 * 1024 * 1024,
                additional_headers=headers,
            )
            self.conn: ClientConnection = self._opener.__enter__()
        except Exception as exc:
            raise ProbeError(f"cannot open {ws_url}: {exc}") from None

    def __enter__(self) -> WsProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._opener.__exit__(None, None, None)

    def send_raw(self, text: str) -> None:
        try:
            self.conn.send(text)
        except ConnectionClosed as exc:
            raise ProbeError(f"the server closed the socket ({exc.rcvd})") from None

    def recv(self) -> dict[str, Any]:
        try:
            frame = self.conn.recv(timeout=self.timeout_s)
        except TimeoutError:
            raise ProbeError(f"no reply within {self.timeout_s} s") from None
        except ConnectionClosed as exc:
            raise ProbeError(f"the server closed the socket ({exc.rcvd})") from None
        try:
            msg = json.loads(frame)
        except ValueError:
            raise ProbeError(f"reply is not JSON: {str(frame)[:200]!r}") from None
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            raise ProbeError(f"reply has no 'type': {str(frame)[:200]}")
        _check_reply(msg)
        return msg

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send_raw(json.dumps(message))
        return self.recv()

    def expect(self, message: dict[str, Any], kind: str) -> dict[str, Any]:
        """Send ``message``; the reply must be of type ``kind`` (an error reply says why not)."""
        reply = self.request(message)
        if reply["type"] != kind:
            raise ProbeError(f"{message['type']} answered {json.dumps(reply)[:300]}, expected {kind!r}")
        data = reply.get("data")
        if not isinstance(data, dict):
            raise ProbeError(f"{kind} reply has no 'data' object: {json.dumps(reply)[:300]}")
        return data

    def wait_closed(self, timeout_s: float) -> int | None:
        """Wait for the server to close the socket; its close code, or raise on a frame/timeout."""
        try:
            frame = self.conn.recv(timeout=timeout_s)
        except TimeoutError:
            raise ProbeError(f"socket still open {timeout_s} s after close") from None
        except ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else None
        msg = json.loads(frame) if isinstance(frame, str) else {}
        if msg.get("type") == "closed":  # an extended server's acknowledgement; the socket may stay
            return None
        raise ProbeError(f"unexpected frame after close: {str(frame)[:200]}")


def _check_reply(msg: dict[str, Any]) -> None:
    """Every reply must fit the protocol's reply models (``openenv._protocol``), the same
    wire-model layer the server and the clients use."""
    from pydantic import ValidationError

    from .._protocol import SERVER_MESSAGE

    try:
        SERVER_MESSAGE.validate_python(msg)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ProbeError(
            f"{msg['type']!r} reply does not fit the protocol's reply model ({where}: {first['msg']}): "
            f"{json.dumps(msg)[:200]}"
        ) from None
