"""``create_app(app_class=CompatApp)``: FastAPI-style routes, middleware and error handlers on
our app (what upstream env packages add to the app they get), next to the env's own routes."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from openenv.server import create_app
from openenv.server._fastapi_style import CompatApp

from .._envs import make_env


class Item(BaseModel):
    name: str
    count: int


class Boom(Exception):
    pass


def _app() -> CompatApp:
    app = create_app(make_env(), app_class=CompatApp)
    assert isinstance(app, CompatApp)

    @app.get("/config/{key}")
    def config(key: str, times: int = 1, request: Request = None) -> dict[str, Any]:  # type: ignore[assignment]
        return {"key": key * times, "path": request.url.path}

    @app.post("/items", status_code=201)
    async def add(item: Item) -> dict[str, Any]:
        return {"name": item.name, "double": item.count * 2}

    @app.get("/needs")
    def needs(q: int) -> int:
        return q

    @app.get("/raw")
    def raw() -> Response:
        return PlainTextResponse("plain")

    @app.get("/boom")
    def boom() -> None:
        raise Boom("no")

    @app.exception_handler(Boom)
    async def on_boom(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=418)

    @app.middleware("http")
    async def tag(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers["x-tag"] = "on"
        return response

    return app


def _run(requests: list[tuple[str, str, Any]]) -> list[httpx.Response]:
    async def go() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return [await client.request(m, url, json=body) for m, url, body in requests]

    return asyncio.run(go())


def test_path_query_request_and_body_are_bound_fastapi_style() -> None:
    config, added, raw = _run(
        [
            ("GET", "/config/ab?times=2", None),
            ("POST", "/items", {"name": "x", "count": 3}),
            ("GET", "/raw", None),
        ]
    )
    assert config.json() == {"key": "abab", "path": "/config/ab"}
    assert (added.status_code, added.json()) == (201, {"name": "x", "double": 6})
    assert raw.text == "plain"
    assert config.headers["x-tag"] == "on"


def test_bad_or_missing_input_is_a_422_and_handlers_answer_errors() -> None:
    bad_body, bad_query, missing, boom = _run(
        [
            ("POST", "/items", {"name": "x"}),
            ("GET", "/config/a?times=many", None),
            ("GET", "/needs", None),
            ("GET", "/boom", None),
        ]
    )
    assert bad_body.status_code == 422
    assert bad_query.status_code == 422
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["loc"] == ["query", "q"]
    assert (boom.status_code, boom.json()) == (418, {"error": "no"})


def test_the_envs_own_routes_still_answer() -> None:
    (health,) = _run([("GET", "/health", None)])
    assert health.status_code == 200


def test_only_http_middleware() -> None:
    with pytest.raises(ValueError, match="only 'http' middleware"):
        _app().middleware("websocket")


def test_get_routes_described_as_data_are_registered() -> None:
    """Upstream's ``GetEndpointConfig`` / ``register_get_endpoints``, on our app."""
    from openenv.server._fastapi_style import GetEndpointConfig, register_get_endpoints

    app = create_app(make_env(), app_class=CompatApp)
    config = GetEndpointConfig("/about", lambda: {"name": "t"}, dict, "info", "About", "What it is")
    register_get_endpoints(app, [config])

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            return await client.get("/about")

    reply = asyncio.run(go())
    assert (reply.status_code, reply.json()) == (200, {"name": "t"})
