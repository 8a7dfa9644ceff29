"""Record upstream OpenEnv 0.10.0's exact wire behaviour, verbatim.

Run with the upstream venv's interpreter:

    .venv-upstream/bin/python tests/interop/upstream_side/probe_wire.py \
        --out /tmp/upstream_frames.json [--markdown /tmp/upstream_frames.md]

What it does (everything on 127.0.0.1, every wait bounded, every child killed):

1. Starts ``serve_echo.py`` (upstream ``create_app`` + uvicorn) as a child.
2. Sends raw frames with the plain ``websockets`` library to ``/ws`` and
   records the verbatim replies and how/when the socket closes.
3. Calls the HTTP routes with ``urllib`` and records status + body.
4. Starts tiny raw ``websockets`` servers in this process and points upstream's
   own ``GenericEnvClient`` / typed ``EnvClient`` at them, to capture the
   client's handshake headers and the exact frames it sends, and to see how it
   copes with replies that carry extra keys.

The JSON written to ``--out`` is the source of ``tests/interop/UPSTREAM_FRAMES.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _upstream_guard  # noqa: E402  (must precede any openenv import)

UPSTREAM_VERSION = _upstream_guard.check()

from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect as ws_connect  # noqa: E402

RECV_TIMEOUT = 3.0


# --------------------------------------------------------------------------
# child server
# --------------------------------------------------------------------------
class UpstreamServer:
    def __init__(self, max_sessions: int, extra: Optional[List[str]] = None) -> None:
        self.max_sessions = max_sessions
        self.extra = extra or []
        self.proc: Optional[subprocess.Popen] = None
        self.port: Optional[int] = None
        self.info: Dict[str, Any] = {}

    def __enter__(self) -> "UpstreamServer":
        cmd = [
            sys.executable,
            os.path.join(HERE, "serve_echo.py"),
            "--port", "0",
            "--max-sessions", str(self.max_sessions),
            "--max-seconds", "240",
            *self.extra,
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line_box: List[str] = []

        def _read() -> None:
            assert self.proc and self.proc.stdout
            line_box.append(self.proc.stdout.readline())

        t = threading.Thread(target=_read, daemon=True)
        t.start()
        t.join(60)
        if not line_box or not line_box[0].strip():
            self.__exit__(None, None, None)
            raise RuntimeError("upstream server did not start")
        self.info = json.loads(line_box[0])
        self.port = int(self.info["port"])
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


# --------------------------------------------------------------------------
# raw WS helpers
# --------------------------------------------------------------------------
def _closed_info(exc: ConnectionClosed) -> Dict[str, Any]:
    rcvd = exc.rcvd
    sent = exc.sent
    return {
        "exception": type(exc).__name__,
        "close_frame_from_server": None if rcvd is None else {"code": rcvd.code, "reason": rcvd.reason},
        "close_frame_from_client": None if sent is None else {"code": sent.code, "reason": sent.reason},
        "server_closed_first": (rcvd is not None and (sent is None or exc.rcvd_then_sent is True)),
    }


def _open(port: int, path: str = "/ws", **kw: Any):
    return ws_connect(f"ws://127.0.0.1:{port}{path}", open_timeout=5, close_timeout=3, **kw)


def _recv_all(ws, first_timeout: float = RECV_TIMEOUT, more_timeout: float = 0.4) -> Dict[str, Any]:
    """Collect every frame until a quiet period or the socket closes."""
    frames: List[Any] = []
    closed = None
    timeout = first_timeout
    while True:
        try:
            frames.append(ws.recv(timeout=timeout))
            timeout = more_timeout
        except TimeoutError:
            break
        except ConnectionClosed as exc:
            closed = _closed_info(exc)
            break
    return {"replies": frames, "closed": closed}


def ws_script(port: int, sends: List[Any], path: str = "/ws", **kw: Any) -> List[Dict[str, Any]]:
    """Open one connection, send each frame in turn, record replies after each."""
    steps: List[Dict[str, Any]] = []
    with _open(port, path, **kw) as ws:
        for frame in sends:
            entry: Dict[str, Any] = {"sent": frame if isinstance(frame, str) else repr(frame)}
            try:
                ws.send(frame)
            except ConnectionClosed as exc:
                entry["send_failed"] = _closed_info(exc)
                steps.append(entry)
                break
            entry.update(_recv_all(ws))
            steps.append(entry)
            if entry["closed"]:
                break
    return steps


def probe_ws(port: int) -> Dict[str, Any]:
    r: Dict[str, Any] = {}
    step_hello = json.dumps({"type": "step", "data": {"message": "hello"}})
    reset = json.dumps({"type": "reset", "data": {}})

    # handshake as seen by a plain websockets client (default: offers permessage-deflate)
    with _open(port) as ws:
        r["handshake_plain_client"] = {
            "request_headers": dict(ws.request.headers.raw_items()),
            "response_status": ws.response.status_code,
            "response_headers": dict(ws.response.headers.raw_items()),
            "negotiated_subprotocol": ws.subprotocol,
        }
    try:
        with _open(port, subprotocols=["openenv.v1"]) as ws:
            r["handshake_offering_subprotocol"] = {
                "negotiated_subprotocol": ws.subprotocol,
                "response_headers": dict(ws.response.headers.raw_items()),
            }
    except Exception as exc:  # noqa: BLE001
        r["handshake_offering_subprotocol"] = {"error_type": type(exc).__name__, "error": str(exc)}

    r["session_basic"] = ws_script(port, [
        json.dumps({"type": "reset"}),
        reset,
        json.dumps({"type": "reset", "data": {"seed": 42}}),
        json.dumps({"type": "reset", "data": {"seed": 42, "episode_id": "ep-7"}}),
        json.dumps({"type": "reset", "data": {"unknown_kw": 1}}),
        step_hello,
        json.dumps({"type": "step", "data": {"message": ""}}),
        json.dumps({"type": "state"}),
        json.dumps({"type": "state", "data": {}}),
        json.dumps({"type": "close"}),
    ])
    r["close_with_data"] = ws_script(port, [json.dumps({"type": "close", "data": {}})])
    r["step_before_reset"] = ws_script(port, [step_hello, json.dumps({"type": "state"})])
    r["state_before_reset"] = ws_script(port, [json.dumps({"type": "state"})])
    r["malformed_json"] = ws_script(port, ["{not json", "", "{\"type\": \"reset\""])
    # valid JSON that is not an object: each on its own connection (the server closes)
    for name, frame in (("json_null", "null"), ("json_number", "42"),
                        ("json_array", "[1,2]"), ("json_string", '"reset"')):
        r[f"non_object_{name}"] = ws_script(port, [frame])
    r["malformed_json_then_ok"] = ws_script(port, ["{not json", reset])
    r["unknown_type"] = ws_script(port, [
        json.dumps({"type": "bogus"}),
        json.dumps({}),
        json.dumps({"type": None}),
        json.dumps({"data": {"message": "x"}}),
        json.dumps({"type": "observation", "data": {}}),
    ])
    r["invalid_action"] = ws_script(port, [
        reset,
        json.dumps({"type": "step", "data": {}}),
        json.dumps({"type": "step", "data": {"message": "x", "extra": 1}}),
        json.dumps({"type": "step", "data": {"message": 5}}),
        json.dumps({"type": "step"}),
        json.dumps({"type": "step", "data": None}),
        json.dumps({"type": "step", "data": {"message": "x", "metadata": {"k": "v"}}}),
        json.dumps({"type": "reset", "data": None}),
        json.dumps({"type": "reset", "data": {"seed": "abc"}}),
        json.dumps({"type": "reset", "data": {"seed": -1}}),
    ])
    r["top_level_extra_keys"] = ws_script(port, [
        json.dumps({"type": "reset", "data": {}, "id": "6"}),
        json.dumps({"type": "step", "data": {"message": "x"}, "id": "7"}),
        json.dumps({"type": "state", "id": "8"}),
        json.dumps({"type": "close", "id": "9"}),
    ])
    r["binary_frame"] = ws_script(port, [reset.encode()])
    r["no_compression_client"] = {"session": ws_script(port, [reset], compression=None)}
    with _open(port, compression=None) as ws:
        r["no_compression_client"]["response_headers"] = dict(ws.response.headers.raw_items())

    # message after close: (a) back-to-back with the close frame, (b) after the close
    entry: Dict[str, Any] = {}
    with _open(port) as ws:
        ws.send(reset)
        entry["reset_reply"] = ws.recv(timeout=RECV_TIMEOUT)
        ws.send(json.dumps({"type": "close"}))
        ws.send(step_hello)  # raced: the server has already left its loop
        entry["after_close_back_to_back"] = {"sent": [json.dumps({"type": "close"}), step_hello], **_recv_all(ws)}
        try:
            ws.send(step_hello)
            entry["send_after_close_handshake"] = "send() returned without error"
        except ConnectionClosed as exc:
            entry["send_after_close_handshake"] = _closed_info(exc)
    r["message_after_close"] = entry

    # client-initiated plain WS close (no {"type":"close"}): the server's close reply
    with _open(port) as ws:
        ws.send(reset)
        ws.recv(timeout=RECV_TIMEOUT)
        ws.close(code=1000, reason="bye")
        p = ws.protocol
        r["client_ws_close_1000"] = {
            "close_frame_from_client": {"code": p.close_sent.code, "reason": p.close_sent.reason},
            "close_frame_from_server": None if p.close_rcvd is None else
            {"code": p.close_rcvd.code, "reason": p.close_rcvd.reason},
        }

    # mcp over /ws on a non-MCP env
    r["ws_mcp"] = ws_script(port, [
        json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list", "id": 1}}),
        json.dumps({"type": "mcp", "data": {}}),
    ])
    return r


def probe_capacity(port: int, max_sessions: int) -> Dict[str, Any]:
    r: Dict[str, Any] = {"max_sessions": max_sessions}
    holders = []
    stack = contextlib.ExitStack()
    try:
        for _ in range(max_sessions):
            ws = stack.enter_context(_open(port))
            ws.send(json.dumps({"type": "reset"}))
            ws.recv(timeout=RECV_TIMEOUT)
            holders.append(ws)
        t0 = time.monotonic()
        try:
            with _open(port) as ws:
                r["handshake_status"] = ws.response.status_code
                r["unsolicited"] = _recv_all(ws, first_timeout=2.0)
        except Exception as exc:  # noqa: BLE001
            r["connect_error"] = {"error_type": type(exc).__name__, "error": str(exc)}
        # the same, but the client sends a frame right away (what EnvClient does)
        try:
            with _open(port) as ws:
                try:
                    ws.send(json.dumps({"type": "reset"}))
                    r["send_right_away"] = _recv_all(ws, first_timeout=2.0)
                except ConnectionClosed as exc:
                    # like upstream's EnvClient: the error frame is still queued; read it
                    r["send_right_away"] = {"send_failed": _closed_info(exc),
                                            "then_recv": _recv_all(ws, first_timeout=1.0)}
        except Exception as exc:  # noqa: BLE001
            r["send_right_away"] = {"error_type": type(exc).__name__, "error": str(exc)}
        r["elapsed_s"] = round(time.monotonic() - t0, 3)
    finally:
        stack.close()
    time.sleep(0.3)
    with _open(port) as ws:
        ws.send(json.dumps({"type": "reset"}))
        r["after_release_reset"] = ws.recv(timeout=RECV_TIMEOUT)
    return r


# --------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------
def http(port: int, method: str, path: str, body: Optional[bytes] = None,
         content_type: Optional[str] = "application/json") -> Dict[str, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method)
    if body is not None and content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, headers, raw = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        status, headers, raw = exc.code, exc.headers, exc.read()
    text = raw.decode("utf-8", "replace")
    out: Dict[str, Any] = {
        "request": f"{method} {path}" + (f" {body.decode()}" if body is not None else ""),
        "status": status,
        "content_type": headers.get("content-type"),
        "body": text,
    }
    return out


def probe_http(port: int) -> Dict[str, Any]:
    r: Dict[str, Any] = {}
    r["health"] = http(port, "GET", "/health")
    r["metadata"] = http(port, "GET", "/metadata")
    schema = http(port, "GET", "/schema")
    try:
        doc = json.loads(schema["body"])
        schema["top_level_keys"] = list(doc.keys())
        schema["action_properties"] = list(doc["action"].get("properties", {}).keys())
        schema["observation_properties"] = list(doc["observation"].get("properties", {}).keys())
        schema["state_properties"] = list(doc["state"].get("properties", {}).keys())
    except Exception:  # noqa: BLE001
        pass
    r["schema"] = schema
    r["reset_empty"] = http(port, "POST", "/reset", b"{}")
    r["reset_no_body"] = http(port, "POST", "/reset", None, None)
    r["reset_seed"] = http(port, "POST", "/reset", b'{"seed": 42, "episode_id": "ep-9"}')
    r["step"] = http(port, "POST", "/step", b'{"action": {"message": "hello"}}')
    r["reset_seed_negative"] = http(port, "POST", "/reset", b'{"seed": -1}')
    r["reset_seed_string"] = http(port, "POST", "/reset", b'{"seed": "abc"}')
    r["reset_unknown_key"] = http(port, "POST", "/reset", b'{"foo": 1}')
    r["reset_malformed_json"] = http(port, "POST", "/reset", b'{nope')
    r["step_top_level_extra_key"] = http(port, "POST", "/step", b'{"action": {"message": "x"}, "id": "7"}')
    r["step_with_timeout_and_request_id"] = http(
        port, "POST", "/step", b'{"action": {"message": "x"}, "timeout_s": 5, "request_id": "r1"}')
    r["step_missing_field"] = http(port, "POST", "/step", b'{"action": {}}')
    r["step_extra_field"] = http(port, "POST", "/step", b'{"action": {"message": "x", "extra": 1}}')
    r["step_no_action"] = http(port, "POST", "/step", b"{}")
    r["state"] = http(port, "GET", "/state")
    r["mcp_empty"] = http(port, "POST", "/mcp", b"{}")
    r["mcp_tools_list"] = http(port, "POST", "/mcp", b'{"jsonrpc": "2.0", "method": "tools/list", "id": 1}')
    r["mcp_bad_json"] = http(port, "POST", "/mcp", b"{nope")
    r["ws_route_over_plain_http"] = http(port, "GET", "/ws")
    r["list_environments"] = http(port, "GET", "/list_environments")
    openapi = http(port, "GET", "/openapi.json")
    try:
        doc = json.loads(openapi["body"])
        r["openapi_paths"] = {p: sorted(v.keys()) for p, v in doc.get("paths", {}).items()}
        r["openapi_info"] = doc.get("info")
    except Exception:  # noqa: BLE001
        r["openapi_raw"] = openapi
    return r


# --------------------------------------------------------------------------
# fake raw server for upstream's client
# --------------------------------------------------------------------------
class FakeServer:
    """A raw ``websockets`` server on 127.0.0.1 that logs the client's handshake
    and frames and answers with scripted replies (callable per message)."""

    def __init__(self, reply: Callable[[Dict[str, Any]], Optional[str]],
                 compression: Optional[str] = "deflate") -> None:
        self.reply = reply
        self.compression = compression
        self.response_headers: List[Any] = []
        self.handshakes: List[Dict[str, Any]] = []
        self.frames: List[Any] = []
        self.close_events: List[Dict[str, Any]] = []
        self.port: Optional[int] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._thread: Optional[threading.Thread] = None
        self._ready = threading.Event()

    async def _handler(self, ws) -> None:
        try:
            async for raw in ws:
                self.frames.append(raw)
                try:
                    msg = json.loads(raw)
                except Exception:  # noqa: BLE001
                    msg = {}
                out = self.reply(msg)
                if out is not None:
                    await ws.send(out)
        except ConnectionClosed:
            pass
        finally:
            self.close_events.append({
                "close_code_seen_by_server": ws.close_code,
                "close_reason": ws.close_reason,
            })

    def _process_request(self, connection, request):
        self.handshakes.append({"path": request.path, "headers": list(request.headers.raw_items())})
        return None

    async def _main(self) -> None:
        from websockets.asyncio.server import serve

        self._stop = asyncio.Event()
        def _process_response(connection, request, response):
            self.response_headers.append(list(response.headers.raw_items()))
            return None

        async with serve(self._handler, "127.0.0.1", 0, process_request=self._process_request,
                         process_response=_process_response, compression=self.compression) as srv:
            self.port = srv.sockets[0].getsockname()[1]
            self._ready.set()
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=60)
            except asyncio.TimeoutError:
                pass

    def __enter__(self) -> "FakeServer":
        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._main())
            self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake server did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread:
            self._thread.join(10)


def _std_reply(extra_data: Dict[str, Any], extra_top: Dict[str, Any],
               obs_extra: Optional[Dict[str, Any]] = None):
    def reply(msg: Dict[str, Any]) -> Optional[str]:
        t = msg.get("type")
        if t == "reset":
            obs = {"echoed_message": "Echo environment ready!", "message_length": 0, "metadata": {}}
            obs.update(obs_extra or {})
            return json.dumps({"type": "observation",
                               "data": {"observation": obs, "reward": 0.0, "done": False, **extra_data},
                               **extra_top})
        if t == "step":
            m = (msg.get("data") or {}).get("message", "")
            obs = {"echoed_message": m, "message_length": len(m), "metadata": {}}
            obs.update(obs_extra or {})
            return json.dumps({"type": "observation",
                               "data": {"observation": obs, "reward": len(m) * 0.1, "done": False, **extra_data},
                               **extra_top})
        if t == "state":
            return json.dumps({"type": "state",
                               "data": {"episode_id": "ep-fake", "step_count": 1, **extra_data},
                               **extra_top})
        return None  # close: no reply, like upstream

    return reply


def _run_client(port: int, mode: str, steps: int = 1, reset_kwargs: Optional[Dict[str, Any]] = None,
                base: str = "http") -> Dict[str, Any]:
    from drive import _err, _jsonable, _make_action, _make_client, _result

    out: Dict[str, Any] = {"mode": mode}
    client = _make_client(f"{base}://127.0.0.1:{port}", mode, 5.0)
    try:
        with client:
            out["reset"] = _result(client.reset(**(reset_kwargs or {})))
            out["steps"] = [_result(client.step(_make_action(mode, f"hello-{i}"))) for i in range(steps)]
            out["state"] = _jsonable(client.state())
        out["ok"] = True
    except BaseException as exc:  # noqa: BLE001
        out["ok"] = False
        out["error"] = _err(exc)
        try:
            client.close()
        except BaseException:  # noqa: BLE001
            pass
    return out


def probe_client() -> Dict[str, Any]:
    r: Dict[str, Any] = {}
    # 1. handshake + frames the upstream client sends (generic and typed)
    for mode in ("generic", "typed"):
        with FakeServer(_std_reply({}, {})) as fake:
            res = _run_client(fake.port, mode, steps=1, reset_kwargs={"seed": 42, "episode_id": "ep-1"})
            time.sleep(0.3)
        r[f"capture_{mode}"] = {
            "client_result": res,
            "handshakes": fake.handshakes,
            "frames_sent_by_client": fake.frames,
            "close_events": fake.close_events,
        }
    with FakeServer(_std_reply({}, {})) as fake:
        res = _run_client(fake.port, "generic", steps=0, base="ws")
        time.sleep(0.3)
    r["capture_ws_scheme_base_url"] = {"client_result": res, "paths": [h["path"] for h in fake.handshakes],
                                       "frames_sent_by_client": fake.frames}

    # server that refuses permessage-deflate: does upstream's client still work?
    with FakeServer(_std_reply({}, {}), compression=None) as fake:
        res = _run_client(fake.port, "generic", steps=1)
        time.sleep(0.2)
    r["server_without_permessage_deflate"] = {"client_result_ok": res.get("ok"), "client_result": res,
                                              "server_response_headers": fake.response_headers}

    # GenericEnvClient.step() given a pydantic Action (not a dict): what goes on the wire
    with FakeServer(_std_reply({}, {})) as fake:
        from echo_models import EchoAction
        from openenv.core.generic_client import GenericEnvClient

        c = GenericEnvClient(base_url=f"http://127.0.0.1:{fake.port}", message_timeout_s=5).sync()
        with c:
            c.reset()
            c.step(EchoAction(message="typed-into-generic"))
            c.step({"message": "kw"}, timeout_s=5.0, request_id="r1")  # kwargs are ignored
        time.sleep(0.2)
    r["generic_client_with_action_model_and_step_kwargs"] = {"frames_sent_by_client": fake.frames}

    # 2. tolerance of replies with unknown keys
    cases = {
        "extra_keys_in_data": ({"truncated": False, "id": "7"}, {}, None),
        "extra_keys_top_level": ({}, {"id": "7"}, None),
        "extra_keys_both_and_in_observation": ({"truncated": False, "id": "7"}, {"id": "7"},
                                                {"unknown_obs_field": 1}),
    }
    for name, (ed, et, oe) in cases.items():
        for mode in ("generic", "typed"):
            with FakeServer(_std_reply(ed, et, oe)) as fake:
                res = _run_client(fake.port, mode, steps=1)
                time.sleep(0.2)
            r[f"tolerance_{name}_{mode}"] = {"server_frames_example": _std_reply(ed, et, oe)(
                {"type": "step", "data": {"message": "hello-0"}}), "client_result": res}

    # 3. an error frame with extra keys, and a reply of an unexpected type
    def err_reply(msg: Dict[str, Any]) -> Optional[str]:
        if msg.get("type") == "close":
            return None
        return json.dumps({"type": "error", "data": {"message": "boom", "code": "EXECUTION_ERROR",
                                                      "id": "7"}, "id": "7"})

    with FakeServer(err_reply) as fake:
        r["error_frame_extra_keys"] = {"server_frame": err_reply({"type": "reset"}),
                                       "client_result": _run_client(fake.port, "generic", steps=0)}

    def weird_reply(msg: Dict[str, Any]) -> Optional[str]:
        if msg.get("type") == "close":
            return None
        return json.dumps({"type": "something_else", "data": {"x": 1}})

    with FakeServer(weird_reply) as fake:
        r["unexpected_reply_type"] = {"server_frame": weird_reply({"type": "reset"}),
                                      "client_result": _run_client(fake.port, "generic", steps=0)}

    def minimal_reply(msg: Dict[str, Any]) -> Optional[str]:
        t = msg.get("type")
        if t in ("reset", "step"):
            return json.dumps({"type": "observation", "data": {"observation": {"echoed_message": "m"}}})
        if t == "state":
            return json.dumps({"type": "state", "data": {}})
        return None

    for mode in ("generic", "typed"):
        with FakeServer(minimal_reply) as fake:
            r[f"missing_reward_done_{mode}"] = {
                "server_frame": minimal_reply({"type": "reset"}),
                "client_result": _run_client(fake.port, mode, steps=1)}
    return r


# --------------------------------------------------------------------------
def to_markdown(rep: Dict[str, Any]) -> str:
    lines: List[str] = []

    def block(title: str, obj: Any) -> None:
        lines.append(f"### {title}\n")
        lines.append("```json")
        lines.append(json.dumps(obj, indent=2, ensure_ascii=False))
        lines.append("```\n")

    for section in ("versions", "server_info", "ws", "capacity", "http", "client"):
        lines.append(f"## raw: {section}\n")
        val = rep.get(section)
        if isinstance(val, dict):
            for k, v in val.items():
                block(k, v)
        else:
            block(section, val)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--max-seconds", type=float, default=300)
    a = ap.parse_args()

    def _die() -> None:
        time.sleep(a.max_seconds)
        sys.stderr.write("probe_wire: time limit\n")
        os._exit(3)

    threading.Thread(target=_die, daemon=True).start()

    from importlib.metadata import version

    rep: Dict[str, Any] = {"versions": {p: version(p) for p in
                                        ("openenv", "websockets", "uvicorn", "fastapi", "starlette", "pydantic")}}
    rep["versions"]["python"] = sys.version.split()[0]
    with UpstreamServer(max_sessions=4) as srv:
        rep["server_info"] = srv.info
        rep["ws"] = probe_ws(srv.port)
        rep["http"] = probe_http(srv.port)
    with UpstreamServer(max_sessions=1) as srv:
        rep["capacity"] = probe_capacity(srv.port, 1)
    rep["client"] = probe_client()

    with open(a.out, "w") as fh:
        json.dump(rep, fh, indent=2, ensure_ascii=False)
    if a.markdown:
        with open(a.markdown, "w") as fh:
            fh.write(to_markdown(rep))
    print(json.dumps({"ok": True, "out": a.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
