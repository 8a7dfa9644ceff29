"""``/openapi.json``, generated from the route table the app runs (no FastAPI).

Routes that describe themselves are ``ApiRoute``s: one route per path, one
``Operation`` per method (summary, request body model, success status and model, and
the ``WireError`` classes it can answer with). Each error status is documented with
the error body ``{"detail", "error": {"code", "message"}}`` and the codes it carries.
Any other ``Route`` in the app (added by a feature or by a user) is listed with its
methods and path parameters and a ``default`` response, so the document never omits
a route the server answers. ``Mount``s and WebSocket routes are listed under
``x-openenv``.

Methods a path does not serve (``OPTIONS`` included: there is no CORS) get
``405 Method Not Allowed`` with an ``Allow`` header naming the path's methods and the
error body (code ``METHOD_NOT_ALLOWED``); unknown paths get ``404`` (``NOT_FOUND``).

``info.version`` is ``1.0.0``: upstream's ``openenv validate --url`` reads it as the
standard version.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from .._exceptions import ErrorCode, WireError

_REF = "#/components/schemas/{model}"
#: Codes of errors that come from routing, not from a ``WireError`` (HTTP only).
NOT_FOUND = "NOT_FOUND"
METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
HTTP_ONLY_CODES = {404: NOT_FOUND, 405: METHOD_NOT_ALLOWED}
_REASONS = {
    400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 409: "Conflict", 410: "Gone",
    413: "Content Too Large", 422: "Unprocessable Content", 429: "Too Many Requests",
    500: "Internal Server Error", 503: "Service Unavailable", 504: "Gateway Timeout",
}

Endpoint = Callable[[Request], Awaitable[Response]]
#: A response schema: a model, a ready JSON Schema, or None (no body described).
Schema = type[BaseModel] | dict[str, Any] | None


@dataclass(frozen=True)
class Operation:
    """What one method of one path does, for the OpenAPI document."""

    summary: str
    response: Schema = None
    status: int = 200
    body: type[BaseModel] | None = None
    errors: Sequence[type[WireError]] = ()
    media_type: str = "application/json"
    #: also answers ``text/html`` (a page for browsers; JSON on ``Accept: application/json``)
    html: bool = False
    #: OpenAPI links of the success response: ``{name: {"operationId", "parameters"}}``
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: error codes this route answers with another status than their class's:
    #: ``{status: [codes]}`` (``{422: ["TASK_NOT_FOUND"]}``)
    also: Mapping[int, Sequence[str]] = field(default_factory=dict)
    #: the request body's schema in place of ``body``'s own (data the server holds, read
    #: when the document is built: ``_task_schema``); ``body`` still parses the request
    body_schema: Callable[[], dict[str, Any]] | None = None
    #: schemas of path parameters in place of ``{"type": "string"}``, read likewise
    path_schemas: Callable[[], dict[str, dict[str, Any]]] | None = None


def operation_id(method: str, route_name: str) -> str:
    """The ``operationId`` of one method of an ``ApiRoute`` (``post_session_step``)."""
    return f"{method.lower()}_{route_name}"


class ApiRoute(Route):
    """One path, one handler and one ``Operation`` per method.

    A single route per path means a wrong method always gets ``405`` with every method
    of the path in ``Allow`` (Starlette tries routes in order; split routes would name
    only the first one's methods).
    """

    def __init__(self, path: str, handlers: dict[str, tuple[Endpoint, Operation]], name: str) -> None:
        self.operations = {method.upper(): op for method, (_, op) in handlers.items()}
        table = {method.upper(): handler for method, (handler, _) in handlers.items()}
        if "GET" in table:
            table["HEAD"] = table["GET"]

        async def dispatch(request: Request) -> Response:
            return await table[request.method](request)

        super().__init__(path, dispatch, methods=list(self.operations), name=name)


class ProtocolRoute(Route):
    """A route of another protocol (an ASGI app: ``/mcp``'s JSON-RPC), documented by its
    methods, the request headers each one requires, and a ``default`` answer (the
    protocol's own)."""

    def __init__(
        self, path: str, app: Any, *, methods: Sequence[str], headers: Mapping[str, Sequence[str]], name: str
    ) -> None:
        self.required_headers = {method.upper(): tuple(names) for method, names in headers.items()}
        super().__init__(path, app, methods=list(methods), name=name)


def error_statuses(
    errors: Iterable[type[WireError]], also: Mapping[int, Sequence[str]] | None = None
) -> dict[int, list[str]]:
    """``{http status: [codes]}`` for a set of error classes, plus the ``also`` codes."""
    pairs = [(err.http_status, err.code.value) for err in errors]
    pairs += [(status, code) for status, codes in (also or {}).items() for code in codes]
    out: dict[int, list[str]] = {}
    for status, code in pairs:
        codes = out.setdefault(status, [])
        if code not in codes:
            codes.append(code)
    return dict(sorted(out.items()))


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF.format(model=name)}


def _error_body_schema() -> dict[str, Any]:
    codes = sorted({c.value for c in ErrorCode} | set(HTTP_ONLY_CODES.values()))
    return {
        "title": "ErrorBody",
        "type": "object",
        "required": ["detail", "error"],
        "properties": {
            "detail": {
                "description": "the message, or FastAPI-style validation errors (as upstream)",
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}],
            },
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {"code": {"type": "string", "enum": codes}, "message": {"type": "string"}},
                "additionalProperties": True,
            },
        },
    }


def _error_response(status: int, codes: list[str]) -> dict[str, Any]:
    return {
        "description": f"{_REASONS.get(status, 'Error')}: {', '.join(codes)}",
        "content": {"application/json": {"schema": _ref("ErrorBody")}},
    }


def _path_parameters(
    route: Route, schemas: Mapping[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    known = schemas or {}
    return [
        {"name": name, "in": "path", "required": True, "schema": known.get(name, {"type": "string"})}
        for name in route.param_convertors
    ]


def _schema(schema: Schema) -> dict[str, Any] | None:
    if schema is None:
        return None
    if isinstance(schema, dict):
        return schema
    return _ref(schema.__name__)


def _described(route: ApiRoute, method: str, op: Operation) -> dict[str, Any]:
    ok: dict[str, Any] = {"description": _REASONS.get(op.status, "OK") if op.status >= 300 else "OK"}
    schema = _schema(op.response)
    if schema is not None:
        ok["content"] = {op.media_type: {"schema": schema}}
    if op.links:
        ok["links"] = op.links
    if op.html:
        ok.setdefault("content", {})["text/html"] = {"schema": {"type": "string"}}
    responses: dict[str, Any] = {str(op.status): ok}
    errors = error_statuses(op.errors, op.also)
    for status, codes in errors.items():
        responses[str(status)] = _error_response(status, codes)
    out: dict[str, Any] = {
        "operationId": operation_id(method, route.name), "summary": op.summary, "responses": responses,
    }
    params = _path_parameters(route, op.path_schemas() if op.path_schemas else None)
    if params:
        out["parameters"] = params
    if op.body is not None:
        body = op.body_schema() if op.body_schema else _ref(op.body.__name__)
        out["requestBody"] = {  # required when the body has required fields (a step's action)
            "required": any(f.is_required() for f in op.body.model_fields.values()),
            "content": {"application/json": {"schema": body}},
        }
    return out


def _undescribed(route: Route, method: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "operationId": operation_id(method, route.name),
        "summary": f"{route.name} (not described)",
        "responses": {"default": {"description": "not described by the route"}},
    }
    params = _path_parameters(route)
    if isinstance(route, ProtocolRoute):
        params += [
            {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
            for name in route.required_headers.get(method, ())
        ]
    if params:
        out["parameters"] = params
    return out


def _unique(name: str, used: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``... when taken (two routes of one handler name)."""
    n, unique = 1, name
    while unique in used:
        n += 1
        unique = f"{name}_{n}"
    used.add(unique)
    return unique


def _models(routes: Sequence[BaseRoute]) -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    for route in routes:
        if isinstance(route, ApiRoute):
            for op in route.operations.values():
                for model in (None if op.body_schema else op.body, op.response):
                    if isinstance(model, type) and issubclass(model, BaseModel):
                        seen.setdefault(model.__name__, model)
    return list(seen.values())


def build_openapi(
    routes: Sequence[BaseRoute],
    *,
    title: str,
    description: str,
    extra: dict[str, Any] | None = None,
    schemas: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes`` (an app's ``app.routes``), in their order:
    the first route that serves a path and method is the one documented, as at run time."""
    paths: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    mounts: list[str] = []
    websockets: list[str] = []
    for route in routes:
        if isinstance(route, WebSocketRoute):
            websockets.append(route.path)
        elif isinstance(route, Mount):
            mounts.append(route.path or "/")
        elif isinstance(route, Route):
            item = paths.setdefault(route.path, {})
            for method in sorted(route.methods or ()):
                if method == "HEAD" or method.lower() in item:
                    continue
                if isinstance(route, ApiRoute):
                    op = item[method.lower()] = _described(route, method, route.operations[method])
                else:
                    op = item[method.lower()] = _undescribed(route, method)
                op["operationId"] = _unique(op["operationId"], used)
    models = _models(routes)
    _, defs = models_json_schema([(m, "validation") for m in models], ref_template=_REF)
    components = {**defs.get("$defs", {}), **(schemas or {}), "ErrorBody": _error_body_schema()}
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": title, "description": description, "version": "1.0.0"},
        "paths": paths,
        "components": {"schemas": components},
        "x-openenv": {**(extra or {}), "websockets": websockets, "mounts": mounts},
    }
    return doc


def reply_schema(model: type[BaseModel], exclude: set[str], suffix: str = "Reply") -> dict[str, Any]:
    """``{"<Model><suffix>": schema, **nested}``: the serialization schema of ``model``
    without the ``exclude`` properties, its nested models beside it (for ``schemas=``)."""
    _, defs = models_json_schema([(model, "serialization")], ref_template=_REF)
    out: dict[str, Any] = copy.deepcopy(defs.get("$defs", {}))
    top = out.pop(model.__name__)
    out[f"{model.__name__}{suffix}"] = top
    for name in exclude:
        top.get("properties", {}).pop(name, None)
    if "required" in top:
        top["required"] = [r for r in top["required"] if r not in exclude]
    return out
