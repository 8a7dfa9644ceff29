"""FastAPI-style methods on our Starlette app (``create_app(app_class=CompatApp)``).

Upstream OpenEnv returns a FastAPI app, and env packages add to it: ``@app.get("/config")``,
``@app.post(...)``, ``app.add_middleware(...)``, ``@app.middleware("http")``,
``@app.exception_handler(...)``, ``app.include_router(router)``. ``CompatApp`` is our
app with those methods. Routes added this way go after the env's own routes (as in
FastAPI, the first route that matches wins), so they never slow the env's routes.

A decorated handler is called FastAPI-style: a parameter annotated ``Request`` (or
``WebSocket``) gets the request, one named like a path parameter gets it (converted to
its annotation), one annotated with a pydantic model gets the JSON body, any other a
query parameter (converted; its default when absent). What it returns is sent as JSON
unless it is a ``Response``. ``include_router`` takes a FastAPI ``APIRouter`` and so
needs FastAPI installed; its routes are served by a FastAPI app mounted last.
``register_get_endpoints`` adds GET routes described as data (``GetEndpointConfig``)
to such an app, or to a FastAPI app.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

_Handler = Callable[..., Any]


def _json(content: Any, status: int) -> Response:
    return Response(orjson.dumps(content, default=to_jsonable_python), status, media_type="application/json")


class _Param:
    __slots__ = ("adapter", "default", "kind", "name")

    def __init__(self, name: str, kind: str, annotation: Any, default: Any) -> None:
        self.name, self.kind, self.default = name, kind, default
        usable = kind != "connection" and annotation not in (inspect.Parameter.empty, Any)
        self.adapter: TypeAdapter[Any] | None = TypeAdapter(annotation) if usable else None

    def convert(self, raw: Any) -> Any:
        if self.adapter is None:
            return raw
        if self.kind == "body":
            return self.adapter.validate_json(raw or b"null")
        return (
            self.adapter.validate_strings(raw) if isinstance(raw, str) else self.adapter.validate_python(raw)
        )


def _params(fn: _Handler, path: str) -> list[_Param]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    out = []
    for p in inspect.signature(fn).parameters.values():
        annotation = hints.get(p.name, p.annotation)
        if inspect.isclass(annotation) and issubclass(annotation, HTTPConnection):
            kind = "connection"
        elif "{" + p.name in path:
            kind = "path"
        elif inspect.isclass(annotation) and issubclass(annotation, BaseModel):
            kind = "body"
        else:
            kind = "query"
        out.append(_Param(p.name, kind, annotation, p.default))
    return out


async def _arguments(params: list[_Param], conn: HTTPConnection) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for p in params:
        if p.kind == "connection":
            kwargs[p.name] = conn
        elif p.kind == "path":
            kwargs[p.name] = p.convert(conn.path_params[p.name])
        elif p.kind == "body":
            kwargs[p.name] = p.convert(await conn.body() if isinstance(conn, Request) else b"null")
        elif p.name in conn.query_params:
            kwargs[p.name] = p.convert(conn.query_params[p.name])
        elif p.default is not inspect.Parameter.empty:
            kwargs[p.name] = p.default
        else:
            raise _Missing(p.name)
    return kwargs


class _Missing(Exception):
    pass


def http_endpoint(fn: _Handler, path: str, status_code: int = 200) -> Callable[[Request], Any]:
    """A Starlette endpoint calling ``fn`` FastAPI-style."""
    params = _params(fn, path)
    is_async = inspect.iscoroutinefunction(fn)

    async def endpoint(request: Request) -> Response:
        try:
            kwargs = await _arguments(params, request)
        except ValidationError as exc:
            return _json({"detail": exc.errors(include_url=False, include_context=False)}, 422)
        except _Missing as exc:
            detail = [{"type": "missing", "loc": ["query", str(exc)], "msg": "Field required"}]
            return _json({"detail": detail}, 422)
        if is_async:
            result = await fn(**kwargs)
        else:
            from starlette.concurrency import run_in_threadpool

            result = await run_in_threadpool(fn, **kwargs)
        return result if isinstance(result, Response) else _json(result, status_code)

    return endpoint


class CompatApp(Starlette):
    """Our app, with the FastAPI methods upstream env packages call on theirs."""

    _fastapi_tail: Any = None

    def _add(self, route: BaseRoute) -> None:
        routes = self.router.routes
        tail = self._fastapi_tail
        if tail is not None and routes and routes[-1] is tail:
            routes.insert(len(routes) - 1, route)
        else:
            routes.append(route)

    def api_route(
        self,
        path: str,
        methods: Sequence[str] | None = None,
        *,
        status_code: int | None = None,
        **_ignored: Any,
    ) -> Callable[[_Handler], _Handler]:
        def decorator(fn: _Handler) -> _Handler:
            endpoint = http_endpoint(fn, path, status_code or 200)
            self._add(Route(path, endpoint, methods=list(methods or ["GET"]), name=fn.__name__))
            return fn

        return decorator

    def get(self, path: str, **kw: Any) -> Callable[[_Handler], _Handler]:
        return self.api_route(path, ["GET"], **kw)

    def post(self, path: str, **kw: Any) -> Callable[[_Handler], _Handler]:
        return self.api_route(path, ["POST"], **kw)

    def put(self, path: str, **kw: Any) -> Callable[[_Handler], _Handler]:
        return self.api_route(path, ["PUT"], **kw)

    def patch(self, path: str, **kw: Any) -> Callable[[_Handler], _Handler]:
        return self.api_route(path, ["PATCH"], **kw)

    def delete(self, path: str, **kw: Any) -> Callable[[_Handler], _Handler]:
        return self.api_route(path, ["DELETE"], **kw)

    def websocket(self, path: str, **_ignored: Any) -> Callable[[_Handler], _Handler]:
        """The handler gets the ``WebSocket`` (FastAPI's is Starlette's)."""

        def decorator(fn: _Handler) -> _Handler:
            self._add(WebSocketRoute(path, fn, name=fn.__name__))
            return fn

        return decorator

    def middleware(self, kind: str) -> Callable[[_Handler], _Handler]:
        if kind != "http":
            raise ValueError(f"only 'http' middleware is supported, not {kind!r}")

        def decorator(fn: _Handler) -> _Handler:
            self.add_middleware(BaseHTTPMiddleware, dispatch=fn)
            return fn

        return decorator

    def exception_handler(self, exc_class_or_status: int | type[Exception]) -> Callable[[_Handler], _Handler]:
        def decorator(fn: _Handler) -> _Handler:
            self.add_exception_handler(exc_class_or_status, fn)
            return fn

        return decorator

    def include_router(self, router: Any, **kwargs: Any) -> None:
        """Serve a FastAPI ``APIRouter``'s routes (after every other route)."""
        if self._fastapi_tail is None:
            from fastapi import FastAPI  # type: ignore[import-not-found,unused-ignore]  # the router passed in is FastAPI's

            sub = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
            self._fastapi_tail = Mount("", app=sub)
            self.router.routes.append(self._fastapi_tail)
        self._fastapi_tail.app.include_router(router, **kwargs)



@dataclass
class GetEndpointConfig:
    path: str
    handler: Callable[[], Any]
    response_model: Any
    tag: str
    summary: str
    description: str


def register_get_endpoints(app: Any, configs: Sequence[GetEndpointConfig]) -> None:
    """Register each config's handler as ``GET path`` on ``app``."""
    for config in configs:
        app.get(
            config.path,
            response_model=config.response_model,
            tags=[config.tag],
            summary=config.summary,
            description=config.description,
        )(_endpoint(config.handler))


def _endpoint(handler: Callable[[], Any]) -> Callable[[], Any]:
    async def endpoint() -> Any:
        return handler()

    return endpoint
