"""Our HTTP servers keep an idle connection open well past their clients' own idle expiry,
so a client never sends a request on a connection the server is closing (a POST is not
replayed: the client saw a read error, the server a disconnect; seen with 512 rollouts
through the capture proxy on a loaded machine)."""

from __future__ import annotations

import httpx

from openenv._keepalive import SERVER_KEEP_ALIVE_S
from openenv.capture import CaptureServer
from openenv.server._serve import uvicorn_options
from openenv.server._settings import ServerSettings


def _client_expiry_s() -> float:
    pool = httpx.AsyncClient()._transport._pool  # type: ignore[attr-defined]
    return float(pool._keepalive_expiry)


def test_the_servers_outlive_httpx_default_idle_expiry() -> None:
    expiry = _client_expiry_s()
    assert 10 * expiry <= SERVER_KEEP_ALIVE_S
    assert uvicorn_options(ServerSettings())["timeout_keep_alive"] == SERVER_KEEP_ALIVE_S


def test_the_capture_proxy_uses_it() -> None:
    with CaptureServer(llm_url="http://127.0.0.1:9/v1", port=0, capture_level="text") as proxy:
        assert proxy._server is not None
        assert proxy._server.config.timeout_keep_alive == SERVER_KEEP_ALIVE_S
