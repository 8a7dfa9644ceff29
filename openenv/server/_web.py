"""The web playground at ``/web``: static HTML/JS that drives the env over ``/sessions``.

The page builds its action form from ``/schema`` in the browser, so the server only
serves three files. They are read from the package on the first request, never at
import or startup. ``ServerSettings.web = False`` (``--no-web``) leaves the routes out.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "playground.js": "text/javascript; charset=utf-8",
    "playground.css": "text/css; charset=utf-8",
}
_cache: dict[str, bytes] = {}


def _read(name: str) -> bytes:
    data = _cache.get(name)
    if data is None:
        data = (resources.files("openenv.server") / "web" / name).read_bytes()
        _cache[name] = data
    return data


async def _index_redirect(request: Request) -> Response:
    # Relative asset URLs in the page need the trailing slash.
    return RedirectResponse(request.url.path + "/", status_code=307)


async def _asset(request: Request) -> Response:
    name = request.path_params.get("name") or "index.html"
    if name not in _TYPES:
        return Response("not found", status_code=404, media_type="text/plain")
    return Response(_read(name), media_type=_TYPES[name], headers={"cache-control": "no-cache"})


def web_routes() -> list[Route]:
    """``GET /web`` (redirect), ``/web/`` (the page) and ``/web/<asset>``."""
    return [
        Route("/web", _index_redirect, methods=["GET"]),
        Route("/web/", _asset, methods=["GET"]),
        Route("/web/{name}", _asset, methods=["GET"]),
    ]
