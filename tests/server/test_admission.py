"""Admission control over a real socket: the bearer token (HTTP, WebSocket, MCP), the
per-client session quota, and the HTTP body limit (the WebSocket frame limit)."""

from __future__ import annotations

import socket

import httpx
import pytest
from websockets.exceptions import InvalidStatus

from openenv import AsyncEnvClient, EnvClient, QuotaExceeded, Unauthorized
from openenv.client import ASGITransport
from openenv.server import ServerSettings, create_app

from .._envs import MODELS, TAction, make_env
from .._wire import call, connect, expect_closed, expect_error, recv

TOKEN = "s3cret-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def _http(server, headers=None, local_address=None):
    transport = httpx.HTTPTransport(local_address=local_address) if local_address else None
    return httpx.Client(base_url=server.url, timeout=10, headers=headers, transport=transport)


# --- the bearer token ----------------------------------------------------------------------


@pytest.fixture
def guarded(serve):
    return serve(auth_token=TOKEN)


@pytest.mark.parametrize(
    "headers",
    [None, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}],
    ids=["none", "wrong", "no-scheme", "basic"],
)
@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/metadata"), ("POST", "/reset"), ("POST", "/sessions"), ("GET", "/openapi.json"),
    ("POST", "/mcp"), ("GET", "/"),
])
def test_http_without_the_token_is_401_before_anything_runs(guarded, headers, method, path):
    with _http(guarded, headers) as http:
        r = http.request(method, path, json={})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "UNAUTHORIZED"
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert guarded.tracker.instances == []  # no env was built
    assert guarded.manager.active == 0


def test_http_with_the_token_is_served_and_health_needs_none(guarded):
    with _http(guarded, BEARER) as http:
        assert http.post("/sessions").status_code == 201
        assert http.post("/reset", json={"seed": 1}).status_code == 200
        assert http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 200
    with _http(guarded) as http:
        assert http.get("/health").json() == {"status": "healthy"}  # probes carry no token


@pytest.mark.parametrize("headers", [None, {"Authorization": "Bearer wrong"}], ids=["none", "wrong"])
def test_a_websocket_handshake_without_the_token_is_refused_with_401(guarded, headers):
    with pytest.raises(InvalidStatus) as info:
        connect(guarded.ws_url, additional_headers=headers)
    assert info.value.response.status_code == 401
    assert b"UNAUTHORIZED" in info.value.response.body
    assert guarded.tracker.instances == []


def test_clients_pass_the_token_once_in_the_handshake(guarded, monkeypatch):
    with pytest.raises(Unauthorized):
        EnvClient(guarded.url, MODELS, token="").reset()
    with EnvClient(guarded.url, MODELS, token=TOKEN) as env:
        env.reset()
        assert env.step(TAction(message="in")).observation.message == "in"
    monkeypatch.setenv("OPENENV_AUTH_TOKEN", TOKEN)
    with EnvClient(guarded.url, MODELS) as env:  # from the environment
        assert env.reset().observation.message == "ready"
    with connect(guarded.ws_url, additional_headers=BEARER) as ws:
        assert call(ws, {"type": "reset", "data": {}})["type"] == "observation"


async def test_the_async_client_and_the_in_process_transport_too(guarded):
    with pytest.raises(Unauthorized):
        async with AsyncEnvClient(guarded.url, MODELS, token="wrong") as env:
            await env.reset()
    async with AsyncEnvClient(guarded.url, MODELS, token=TOKEN) as env:
        assert (await env.reset()).observation.message == "ready"
    env_class = make_env()
    app = create_app(env_class, settings=ServerSettings(auth_token=TOKEN))
    with pytest.raises(Unauthorized):
        async with AsyncEnvClient("http://app", MODELS, token="", transport=ASGITransport(app)) as env:
            await env.reset()


def test_no_token_set_means_open(server):
    with _http(server) as http:
        assert http.post("/sessions").status_code == 201
    with connect(server.ws_url) as ws:
        assert call(ws, {"type": "reset", "data": {}})["type"] == "observation"


# --- the per-client session quota ------------------------------------------------------------


def test_one_client_stops_at_its_quota_while_another_still_gets_sessions(serve):
    server = serve(max_sessions_per_client=3, max_sessions=64)
    with _http(server) as http, _http(server, local_address="127.0.0.2") as other:
        answers = [http.post("/sessions") for _ in range(2000)]  # bounded: 2,000 attempts
        assert [r.status_code for r in answers] == [201] * 3 + [429] * 1997
        refused = answers[-1].json()
        assert refused["error"]["code"] == "QUOTA_EXCEEDED"
        assert refused["error"]["client"] == "127.0.0.1"
        assert refused["error"]["max_sessions_per_client"] == 3
        assert http.post("/reset").status_code == 429  # a stateless call needs a session too
        assert other.post("/sessions").status_code == 201  # another address is not starved
        assert server.manager.active == 4
        sid = answers[0].json()["session_id"]
        assert http.delete(f"/sessions/{sid}").status_code == 200  # closing one frees a place
        assert http.post("/sessions").status_code == 201
        assert http.post("/sessions").status_code == 429


def test_the_quota_counts_websocket_sessions_and_the_client_raises_quota_exceeded(serve):
    server = serve(max_sessions_per_client=2)
    with connect(server.ws_url, extended=True) as ws:
        for name in ("a", "b"):
            assert call(ws, {"type": "reset", "session": name, "data": {}})["type"] == "observation"
        data = expect_error(call(ws, {"type": "reset", "session": "c", "data": {}}), "QUOTA_EXCEEDED")
        assert data["max_sessions_per_client"] == 2
        with pytest.raises(QuotaExceeded), EnvClient(server.url, MODELS) as env:
            env.reset()
        call(ws, {"type": "close", "session": "a", "id": 1})
        assert call(ws, {"type": "reset", "session": "c", "data": {}})["type"] == "observation"
    with _http(server) as http:  # the socket's sessions went with it
        assert [http.post("/sessions").status_code for _ in range(3)] == [201, 201, 429]


def test_a_plain_connection_over_the_quota_gets_the_error_then_close_1013(serve):
    server = serve(max_sessions_per_client=1)
    with connect(server.ws_url) as first:  # upstream's dialect: a session at connect
        assert call(first, {"type": "reset", "data": {}})["type"] == "observation"
        second = connect(server.ws_url)
        expect_error(recv(second), "QUOTA_EXCEEDED")
        assert expect_closed(second) == 1013  # "try again later", as for capacity


def test_zero_means_no_quota(serve):
    server = serve(max_sessions_per_client=0)  # the default keeps a quarter: test_client_identity.py
    with _http(server) as http:
        assert all(http.post("/sessions").status_code == 201 for _ in range(20))


# --- the HTTP body limit ---------------------------------------------------------------------


LIMIT = 4096


@pytest.fixture
def small(serve):
    return serve(max_frame_bytes=LIMIT)


def test_a_body_over_the_limit_is_413_and_builds_no_env(small):
    body = b'{"action": {"message": "' + b"x" * LIMIT + b'"}}'
    with _http(small) as http:
        r = http.post("/step", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "FRAME_TOO_LARGE"
        assert r.json()["error"]["limit"] == LIMIT
        assert small.tracker.instances == []
        fits = http.post("/step", json={"action": {"message": "x" * (LIMIT - 100)}})
        assert fits.status_code == 200


def test_a_chunked_body_is_counted_as_it_arrives(small):
    def pieces(n):
        yield b'{"action": {"message": "'
        for _ in range(n):
            yield b"x" * 512
        yield b'"}}'

    with _http(small) as http:
        over = http.post("/step", content=pieces(20), headers={"content-type": "application/json"})
        assert "content-length" not in over.request.headers  # sent chunked
        assert over.status_code == 413
        assert over.json()["error"]["code"] == "FRAME_TOO_LARGE"
        under = http.post("/step", content=pieces(2), headers={"content-type": "application/json"})
        assert under.status_code == 200
    assert small.tracker.count("step") == 1


def test_a_huge_content_length_is_answered_without_reading_the_body(small):
    with socket.create_connection(("127.0.0.1", small.port), timeout=5) as sock:
        sock.sendall(
            b"POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000000\r\n\r\n"  # 100 MB announced, none of it sent
        )
        head = sock.recv(4096)  # answered at once: the server did not wait for the body
    assert head.startswith(b"HTTP/1.1 413 ")
