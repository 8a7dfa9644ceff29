"""Protocol endpoints plugged into an app (``create_app(endpoints=...)``), over real sockets.

The endpoint here is a small one written for the test: it serves ``GET /echo-proto``
and answers JSON-RPC frames whose method it knows, so the seam is exercised with
no MCP at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from openenv.server import ServerSettings, create_app
from openenv.server._jsonrpc import envelope_error, mcp_not_supported
from openenv.server._mounts import ENTRY_POINT_GROUP, installed_endpoints
from openenv.server._root import OpenApiDocument

from .._envs import make_env
from .._wire import call, connect
from ..conftest import LiveServer

LIST = {"jsonrpc": "2.0", "method": "tools/list", "id": 1}
SETTINGS = ServerSettings(host="127.0.0.1", port=0, idle_timeout_s=0, ping_interval_s=0, ping_timeout_s=0)


class EchoProtocol:
    """Answers ``echo/*`` JSON-RPC methods and ``GET /echo-proto``; records its lifespan."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    @property
    def routes(self) -> list[BaseRoute]:
        return [Route("/echo-proto", self.page, methods=["GET"])]

    async def page(self, request: Request) -> Response:
        return JSONResponse({"running": self.events[-1] == "start"})

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self.events.append("start")
        try:
            yield
        finally:
            self.events.append("stop")

    async def ws_message(self, request: Any, session: Any) -> dict[str, Any] | None:
        if not str(request.get("method", "")).startswith("echo/"):
            return None  # not mine: the next endpoint, or the server's stub, answers
        return {"jsonrpc": "2.0", "id": request.get("id"), "result": {"echo": request.get("params")}}


@contextlib.contextmanager
def running(endpoints: Any) -> Iterator[LiveServer]:
    env_class = make_env()
    server = LiveServer(create_app(env_class, settings=SETTINGS, endpoints=endpoints), SETTINGS, env_class)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_plugged_endpoint_serves_routes_ws_frames_and_runs_with_the_app():
    events: list[str] = []
    seen: list[tuple[Any, ...]] = []

    def factory(env_class: Any, manager: Any, settings: Any) -> EchoProtocol:
        seen.append((env_class, manager, settings))
        return EchoProtocol(events)

    with running([factory, lambda *_: None]) as server:  # a factory may decline: None
        assert events == ["start"]
        assert httpx.get(f"{server.url}/echo-proto", timeout=5).json() == {"running": True}
        with connect(server.ws_url) as ws:
            mine = call(ws, {"type": "mcp", "data": {**LIST, "method": "echo/x", "params": [7]}})
            other = call(ws, {"type": "mcp", "data": LIST})
        # no MCP endpoint was asked for: POST /mcp is the env routes' stub
        stub = httpx.post(f"{server.url}/mcp", json=LIST, timeout=5).json()
    assert events == ["start", "stop"]
    assert seen[0][0] is server.env_class
    assert seen[0][2] is SETTINGS
    assert mine["data"] == {"jsonrpc": "2.0", "id": 1, "result": {"echo": [7]}}
    assert other["data"] == mcp_not_supported(LIST)
    assert stub["error"] == {"code": -32603, "message": "Environment does not support MCP", "data": None}


def test_no_endpoints_leaves_the_json_rpc_stub():
    with running(()) as server, connect(server.ws_url) as ws:
        reply = call(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call", "id": 9}})
        assert httpx.get(f"{server.url}/echo-proto", timeout=5).status_code == 404
    assert reply["data"]["error"]["message"] == "Environment does not support MCP"


def test_the_mcp_bridge_is_installed_as_an_entry_point():
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from openenv.mcp._http import mcp_endpoint

    assert mcp_endpoint in installed_endpoints(), (
        f"no {ENTRY_POINT_GROUP!r} entry point for openenv.mcp: reinstall openenv (pip install -e .)"
    )


@pytest.mark.parametrize(
    ("request_", "rid"),
    [({}, None), ([], None), ("x", None), ({"jsonrpc": "1.0", "method": "m", "id": 3}, 3),
     ({"jsonrpc": "2.0", "method": 5, "id": "a"}, "a")],
)
def test_envelope_error_refuses_what_is_not_a_request(request_, rid):
    reply = envelope_error(request_)
    assert reply == {"jsonrpc": "2.0", "id": rid, "error": {
        "code": -32600, "message": "Invalid Request: expected a JSON-RPC 2.0 request", "data": None}}


def test_envelope_error_passes_a_request():
    assert envelope_error({"jsonrpc": "2.0", "method": "tools/list"}) is None


def test_the_openapi_document_is_built_once_per_app():
    built: list[int] = []

    def schemas() -> dict[str, Any]:
        built.append(1)
        return {}

    class FakeApp:  # a test double: the document only reads app.routes
        routes: list[BaseRoute] = [Route("/x", lambda r: Response(), methods=["GET"])]

    class FakeRequest:
        app = FakeApp()

    document = OpenApiDocument(make_env(), schemas)
    first = document(FakeRequest())  # type: ignore[arg-type]
    assert document(FakeRequest()) is first  # type: ignore[arg-type]
    assert built == [1]
    assert "/x" in first["paths"]
