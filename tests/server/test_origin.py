"""Browser-origin protection over a real socket: a foreign ``Host`` (DNS rebinding) or a
page of another origin is refused on every route, the WebSocket handshake and every MCP
dialect, before any env is built; Python clients (no ``Origin``) are served as before.
The same checks in a real browser: ``tests/web/test_cross_origin.py``."""

from __future__ import annotations

import base64
import os
import socket

import httpx
import orjson
import pytest

from openenv import EnvClient, Forbidden
from openenv.server._origin import OriginPolicy, host_name, is_loopback_bind

from .._envs import MODELS
from .._wire import call, connect

EVIL_HOST = "evil.example"
MCP_JSON = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}},
}
SESSIONLESS_LIST = {
    "jsonrpc": "2.0", "id": 1, "method": "tools/list",
    "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}}},
}
SESSIONLESS_HEADERS = {
    "accept": "application/json, text/event-stream", "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list",
}
SWITCHING = b"HTTP/1.1 101 Switching Protocols"
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
#: (method, path, body, extra headers): every route family of an env server.
ROUTES = [
    ("GET", "/", None, {}),
    ("GET", "/docs", None, {}),
    ("GET", "/openapi.json", None, {}),
    ("GET", "/health", None, {}),
    ("GET", "/metadata", None, {}),
    ("GET", "/schema", None, {}),
    ("POST", "/reset", {}, {}),
    ("POST", "/step", {"action": {"message": "x"}}, {}),
    ("GET", "/state", None, {}),
    ("POST", "/sessions", None, {}),
    ("GET", "/sessions", None, {}),
    ("GET", "/web/", None, {}),
    ("GET", "/web/playground.js", None, {}),
]
#: Every dialect of /mcp: upstream's JSON-RPC, an SDK initialize, the sessionless
#: 2026-07-28 protocol, and a session's event stream and end.
MCP_DIALECTS = [
    ("POST", {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}, {}),
    ("POST", TOOLS_LIST, {}),
    ("POST", INITIALIZE, MCP_JSON),
    ("POST", SESSIONLESS_LIST, SESSIONLESS_HEADERS),
    ("GET", None, {"accept": "text/event-stream", "mcp-session-id": "abc"}),
    ("DELETE", None, {"mcp-session-id": "abc"}),
]
ROUTE_IDS = [f"{m} {p}" for m, p, *_ in ROUTES]
MCP_IDS = ["upstream-session-create", "upstream-tools-list", "sdk-initialize", "sdk-2026-sessionless",
           "sdk-get-stream", "sdk-delete"]


def _request(server, method, path, body, headers):
    with httpx.Client(base_url=server.url, timeout=10) as http:
        content = orjson.dumps(body) if body is not None else None
        if content is not None:
            headers = {"content-type": "application/json", **headers}
        return http.request(method, path, content=content, headers=headers)


def _assert_forbidden(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "FORBIDDEN"


def _nothing_ran(server) -> None:
    assert server.tracker.instances == []  # no env was built
    assert server.manager.active == 0


def _handshake(port: int, host: str, origin: str | None = None, path: str = "/ws") -> bytes:
    """The status line of a WebSocket handshake sent by hand (any Host, any Origin)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Upgrade: websocket", "Connection: Upgrade",
             f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = sock.recv(4096)
    return head.split(b"\r\n", 1)[0]


# --- Host: DNS rebinding ------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body", "headers"), ROUTES, ids=ROUTE_IDS)
def test_a_foreign_host_is_refused_on_every_route(server, method, path, body, headers):
    response = _request(server, method, path, body, {**headers, "host": f"{EVIL_HOST}:{server.port}"})
    _assert_forbidden(response)
    assert "--allowed-hosts" in response.json()["error"]["message"]
    _nothing_ran(server)


@pytest.mark.parametrize(("method", "body", "headers"), MCP_DIALECTS, ids=MCP_IDS)
def test_a_foreign_host_is_refused_on_every_mcp_dialect(server, method, body, headers):
    response = _request(server, method, "/mcp", body, {**headers, "host": EVIL_HOST})
    _assert_forbidden(response)
    _nothing_ran(server)


@pytest.mark.parametrize(("method", "body", "headers"), MCP_DIALECTS[:4], ids=MCP_IDS[:4])
def test_every_mcp_dialect_is_served_under_a_loopback_host(server, method, body, headers):
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}"):
        assert _request(server, method, "/mcp", body, {**headers, "host": host}).status_code == 200


def test_a_foreign_host_is_refused_on_the_websocket_handshake(server):
    assert _handshake(server.port, f"{EVIL_HOST}:{server.port}") == b"HTTP/1.1 403 Forbidden"
    assert _handshake(server.port, f"127.0.0.1:{server.port}") == SWITCHING
    server.wait_active(0)
    assert len(server.tracker.instances) == 1  # the one served handshake's session


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:1", "127.0.0.1", "[::1]:8000", "10.1.2.3:80",
                                  "[fe80::1]", "app.localhost:9", "testserver", "mybox:8000"])
def test_loopback_names_and_addresses_are_served(server, host):
    assert _request(server, "GET", "/metadata", None, {"host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "localhost.evil.example:80",
                                  "evil.example:8000", "evil.example.", "1.2.3.4.nip.io"])
def test_names_are_refused_on_a_loopback_bind(server, host):
    _assert_forbidden(_request(server, "GET", "/metadata", None, {"host": host}))


def test_listed_hosts_are_served_and_star_turns_the_check_off(serve):
    listed = serve(allowed_hosts="env.example, other.example")
    assert _request(listed, "GET", "/metadata", None, {"host": "ENV.example:1234"}).status_code == 200
    assert _request(listed, "GET", "/metadata", None, {"host": "localhost"}).status_code == 200
    _assert_forbidden(_request(listed, "GET", "/metadata", None, {"host": EVIL_HOST}))
    anything = serve(allowed_hosts="*")
    assert _request(anything, "GET", "/metadata", None, {"host": EVIL_HOST}).status_code == 200


def test_a_network_bind_serves_any_host_unless_hosts_are_listed(serve):
    # settings.host is the bind the policy reads; the test socket itself stays on loopback
    wide = serve(host="0.0.0.0")
    assert _request(wide, "GET", "/metadata", None, {"host": "org-env.hf.space"}).status_code == 200
    assert _handshake(wide.port, "env.default.svc.cluster.local:8000") == SWITCHING
    narrow = serve(host="0.0.0.0", allowed_hosts="env.example")
    assert _request(narrow, "GET", "/metadata", None, {"host": "env.example"}).status_code == 200
    _assert_forbidden(_request(narrow, "GET", "/metadata", None, {"host": "org-env.hf.space"}))


# --- Origin: pages of other origins --------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body", "headers"), ROUTES, ids=ROUTE_IDS)
def test_a_page_of_another_origin_is_refused_on_every_route(server, method, path, body, headers):
    other = f"http://127.0.0.1:{server.port % 65535 + 1}"  # another port: another origin
    response = _request(server, method, path, body, {**headers, "origin": other})
    _assert_forbidden(response)
    assert "--allowed-origins" in response.json()["error"]["message"]
    _nothing_ran(server)


@pytest.mark.parametrize(("method", "body", "headers"), MCP_DIALECTS, ids=MCP_IDS)
def test_a_page_of_another_origin_is_refused_on_every_mcp_dialect(server, method, body, headers):
    _assert_forbidden(_request(server, method, "/mcp", body, {**headers, "origin": "http://evil.example"}))
    _nothing_ran(server)


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:{port}",
                                    "https://127.0.0.1:{port}.evil.example", "file://"])
def test_the_websocket_handshake_refuses_other_origins(server, origin):
    head = _handshake(server.port, f"127.0.0.1:{server.port}", origin.format(port=server.port))
    assert head == b"HTTP/1.1 403 Forbidden"
    _nothing_ran(server)


def test_the_server_s_own_pages_and_listed_origins_are_served(serve):
    server = serve(allowed_origins="http://localhost:3000, https://app.example")
    own = f"http://127.0.0.1:{server.port}"
    for origin in (own, "http://localhost:3000", "https://APP.example:443"):
        assert _request(server, "POST", "/sessions", None, {"origin": origin}).status_code == 201
        assert _handshake(server.port, f"127.0.0.1:{server.port}", origin) == SWITCHING
    _assert_forbidden(_request(server, "POST", "/sessions", None, {"origin": "http://localhost:3001"}))
    _assert_forbidden(_request(server, "POST", "/sessions", None, {"origin": "http://app.example"}))
    anyone = serve(allowed_origins="*")
    assert _request(anyone, "POST", "/sessions", None, {"origin": "http://evil.example"}).status_code == 201


def test_the_origin_is_checked_before_the_token(serve):
    server = serve(auth_token="tok")
    bearer = {"authorization": "Bearer tok"}
    _assert_forbidden(_request(server, "POST", "/sessions", None, {**bearer, "origin": "http://evil.example"}))
    assert _request(server, "POST", "/sessions", None, bearer).status_code == 201


def test_python_clients_send_no_origin_and_are_served(server):
    with EnvClient(server.url, MODELS) as env:
        assert env.reset().observation.message == "ready"
    with connect(server.ws_url) as ws:
        assert call(ws, {"type": "reset", "data": {}})["type"] == "observation"
    with httpx.Client(base_url=server.url, timeout=10) as http:
        assert http.post("/mcp", json=TOOLS_LIST).status_code == 200


def test_a_refused_handshake_is_a_typed_error_for_the_client(server):
    with pytest.raises(Forbidden, match="--allowed-origins"), EnvClient(
        server.url, MODELS, headers={"Origin": "http://evil.example"}
    ) as env:
        env.reset()
    _nothing_ran(server)


# --- the policy itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "name"), [
    ("Example.COM:80", "example.com"), ("[::1]:9", "::1"), ("::1", "::1"), ("127.0.0.1", "127.0.0.1"),
    ("[fe80::1]", "fe80::1")])
def test_host_name(value, name):
    assert host_name(value) == name


@pytest.mark.parametrize(("bind", "loopback"), [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                                ("localhost", True), ("0.0.0.0", False), ("::", False),
                                                ("10.0.0.5", False), ("env.example", False)])
def test_loopback_binds(bind, loopback):
    assert is_loopback_bind(bind) is loopback


def test_the_policy_answers_none_for_what_it_serves():
    policy = OriginPolicy("127.0.0.1")
    assert policy.refusal(b"127.0.0.1:8000", None) is None
    assert policy.refusal(b"127.0.0.1:8000", b"http://127.0.0.1:8000") is None
    assert policy.refusal(b"localhost", b"http://localhost:80") is None  # default port left out
    assert policy.refusal(None, None) is None  # HTTP/1.0 without Host: no browser sends that
    assert "Host" in (policy.refusal(b"evil.example:8000", b"http://evil.example:8000") or "")
    assert "origin" in (policy.refusal(b"127.0.0.1:8000", b"http://127.0.0.1:8001") or "")


@pytest.mark.parametrize(("site", "mode", "served"), [
    ("cross-site", "no-cors", False), ("same-site", "no-cors", False), ("cross-site", "cors", False),
    ("cross-site", "navigate", True), ("same-origin", "cors", True), ("none", "navigate", True),
])
def test_a_get_without_origin_is_judged_by_sec_fetch_site(server, site, mode, served):
    """An <img> or <script> of another page sends no Origin on a GET, but Sec-Fetch-Site."""
    response = _request(server, "GET", "/state", None, {"sec-fetch-site": site, "sec-fetch-mode": mode})
    if served:
        assert response.status_code == 200
    else:
        _assert_forbidden(response)
        _nothing_ran(server)
