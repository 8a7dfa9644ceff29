"""``GET /``: what this server is; ``/openapi.json`` and ``/docs``: its HTTP API.

``/`` answers a small HTML page (JSON with ``Accept: application/json``) naming the env,
its version and the package version, with links to ``/schema``, ``/openapi.json``,
``/docs``, ``/health``, the WebSocket ``/ws`` and the ``/web`` playground when served.
``/openapi.json`` (``OpenApiDocument``) is built on first use from the routes the app
runs, user routes too. ``/docs`` lists every documented operation (method, path,
summary, request body, responses) from that document: no JavaScript, no CDN.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from .._env import EnvClass
from ._http import json_response
from ._openapi import ApiRoute, Operation, build_openapi
from ._task_schema import TaskCatalog, constrain_reset

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.4}"
    "code,pre{background:#f4f4f4;padding:0 .2rem}table{border-collapse:collapse;width:100%}"
    "td,th{border-bottom:1px solid #ddd;padding:.3rem;text-align:left;vertical-align:top}"
)
_ROOT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "description", "version", "openenv_version", "links"],
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "version": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "openenv_version": {"type": "string"},
        "links": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def root_info(request: Request, env_class: EnvClass) -> dict[str, Any]:
    from .._version import __version__

    meta = env_class.metadata()
    served = {route.path for route in request.app.routes if isinstance(route, Route)}
    links = {
        "schema": "/schema", "openapi": "/openapi.json", "docs": "/docs", "health": "/health",
        "metadata": "/metadata", "websocket": "/ws",
    }
    if "/web/" in served:
        links["web"] = "/web/"
    return {
        "name": meta.name, "description": meta.description, "version": meta.version,
        "openenv_version": __version__, "links": links,
    }


class OpenApiDocument:
    """The app's OpenAPI document, built once from ``request.app.routes`` on first use.

    ``schemas()`` gives the models the env's routes refer to (``HttpApi.openapi_schemas``).
    """

    def __init__(self, env_class: EnvClass, schemas: Callable[[], dict[str, Any]]) -> None:
        self.env_class = env_class
        self.schemas = schemas
        self._document: dict[str, Any] = {}

    def __call__(self, request: Request) -> dict[str, Any]:
        if not self._document:
            meta = self.env_class.metadata()
            self._document = build_openapi(
                request.app.routes, title=meta.name, description=meta.description, schemas=self.schemas(),
                extra={
                    "action": self.env_class.action_model.__name__,
                    "observation": self.env_class.observation_model.__name__,
                    "websocket": "/ws",
                },
            )
            _constrain_reset(self._document, self.env_class)
        return self._document

    async def endpoint(self, request: Request) -> Response:
        return json_response(self(request))

    def route(self) -> Route:
        """``GET /openapi.json``."""
        return Route("/openapi.json", self.endpoint, methods=["GET"])


def _constrain_reset(doc: dict[str, Any], env_class: EnvClass) -> None:
    """A reset body whose options choose a task of the served task set says which
    (``_task_schema``): ``ResetRequest`` gets the task set's choices."""
    from ._tasks import task_set_of

    tasks = task_set_of(env_class)
    options = getattr(env_class, "reset_options_model", None)
    components = doc["components"]["schemas"]
    if tasks is None or options is None or "ResetRequest" not in components:
        return
    from ..tasks import TaskOptions

    if issubclass(options, TaskOptions):
        catalog = TaskCatalog.read(env_class.metadata().name, tasks)
        components["ResetRequest"] = constrain_reset(components["ResetRequest"], catalog)


def _docs_body(doc: dict[str, Any]) -> str:
    rows = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            body_name = body.get("$ref", "").rsplit("/", 1)[-1]
            responses = "<br>".join(
                f"<code>{html.escape(status)}</code> {html.escape(r.get('description', ''))}"
                for status, r in op["responses"].items()
            )
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                f"<td>{html.escape(op.get('summary', ''))}</td><td>{html.escape(body_name)}</td>"
                f"<td>{responses}</td></tr>"
            )
    info = doc["info"]
    return (
        f"<h1>{html.escape(info['title'])}: HTTP API</h1><p>{html.escape(info.get('description') or '')}</p>"
        '<p>The machine-readable document: <a href="/openapi.json">/openapi.json</a>. Errors answer '
        '<code>{"detail", "error": {"code", "message"}}</code>. Episodes over WebSocket: '
        "<code>/ws</code> (see <code>x-openenv</code> in the document).</p>"
        "<table><tr><th>method</th><th>path</th><th>what</th><th>body</th><th>responses</th></tr>"
        + "".join(rows) + "</table>"
    )


def root_routes(env_class: EnvClass, openapi: Callable[[Request], dict[str, Any]]) -> list[Route]:
    """``GET /`` and ``GET /docs``; ``openapi(request)`` returns the app's OpenAPI document."""

    async def root(request: Request) -> Response:
        info = root_info(request, env_class)
        if _wants_json(request):
            return json_response(info)
        links = "".join(
            f'<li><a href="{html.escape(url)}">{html.escape(url)}</a> ({html.escape(name)})</li>'
            for name, url in info["links"].items() if name != "websocket"
        )
        version = f" {info['version']}" if info["version"] else ""
        return _page(info["name"], (
            f"<h1>{html.escape(info['name'])}{html.escape(version)}</h1>"
            f"<p>{html.escape(info['description'])}</p>"
            f"<p>An OpenEnv environment server (openenv {html.escape(info['openenv_version'])}). "
            "Agents connect over WebSocket at <code>/ws</code>.</p>"
            f"<ul>{links}</ul>"
        ))

    async def docs(request: Request) -> Response:
        doc = openapi(request)
        return _page(f"{doc['info']['title']} API", _docs_body(doc))

    return [
        ApiRoute("/", {"GET": (root, Operation(
            "What this server is: name, versions, links (HTML; JSON on Accept: application/json)",
            _ROOT_SCHEMA, html=True))}, "root"),
        ApiRoute("/docs", {"GET": (docs, Operation(
            "The OpenAPI document as a plain HTML page", None, html=True))}, "docs"),
    ]
