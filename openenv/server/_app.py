"""``create_app``: wire the routes, the WebSocket endpoint and the session manager."""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute

from .._env import AnyEnv, AsyncEnvironment, EnvClass, Environment
from .._exceptions import WireError
from .._protocol import request_adapter
from ._http import HttpApi, handle_http_error, handle_wire_error, json_response
from ._jsonrpc import mcp_mount
from ._openapi import build_openapi
from ._root import root_routes
from ._runner import EnvRunner
from ._sessions import SessionManager
from ._settings import ServerSettings
from ._tasks import preload_tasks, task_routes
from ._web import web_routes
from ._ws import make_ws_endpoint

log = logging.getLogger("openenv.server")


def create_app(
    env: EnvClass | Callable[..., AnyEnv],
    *,
    env_class: EnvClass | None = None,
    settings: ServerSettings | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> Starlette:
    """Build the ASGI app serving one environment.

    Args:
        env: the env class (called per session with ``env_kwargs``), or a factory.
        env_class: the class a factory returns; required when ``env`` is not a class.
        settings: server settings; default ``ServerSettings.from_env()``.
        env_kwargs: constructor arguments of each session's env; default
            ``settings.env_kwargs`` (``--env-kwargs``, ``OPENENV_ENV_KWARGS``). With
            per-process resources (``process_resources``) the env also gets
            ``resources=``.

    The app exposes ``app.state.sessions`` (the ``SessionManager``) for tests and tools.
    """
    if inspect.isclass(env):
        if not issubclass(env, Environment | AsyncEnvironment):
            raise TypeError(f"{env.__name__} is not an Environment or AsyncEnvironment subclass")
        env_class = env_class or env
    elif not callable(env):
        raise TypeError(
            "create_app() takes an env class or a factory, not an instance: each session gets its own env"
        )
    if env_class is None:
        raise TypeError("create_app(factory) needs env_class= to know the env's models")
    settings = settings or ServerSettings.from_env()

    runner = EnvRunner(
        env_class,
        env,
        slow_call_s=settings.slow_call_s,
        thread_workers=settings.thread_workers,
        call_timeout_s=settings.call_timeout_s,
        max_call_timeout_s=settings.max_call_timeout_s,
        interrupt_grace_s=settings.interrupt_grace_s,
        env_kwargs=settings.env_kwargs if env_kwargs is None else env_kwargs,
    )
    manager = SessionManager(runner, settings.max_sessions, settings.idle_timeout_s)
    api = HttpApi(env_class, manager)
    mcp = mcp_mount(env_class, manager, settings)
    openapi: dict[str, Any] = {}

    def openapi_document(request: Request) -> dict[str, Any]:
        if not openapi:  # built on first use from the routes the app runs (user routes too)
            meta = env_class.metadata()
            openapi.update(build_openapi(
                request.app.routes, title=meta.name, description=meta.description,
                schemas=api.openapi_schemas(), extra={
                    "action": env_class.action_model.__name__,
                    "observation": env_class.observation_model.__name__,
                    "websocket": "/ws",
                },
            ))
        return openapi

    async def openapi_json(request: Request) -> Response:
        return json_response(openapi_document(request))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await runner.start()
        await preload_tasks(env_class)
        manager.start()
        try:
            async with mcp.running():
                yield
        finally:
            await manager.shutdown()

    routes = [
        *mcp.routes,  # before api's POST /mcp stub
        *api.routes(),
        *task_routes(env_class),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        *root_routes(env_class, openapi_document),  # GET / and /docs
        WebSocketRoute(
            "/ws",
            make_ws_endpoint(manager, request_adapter(env_class.action_model), mcp, settings.max_frame_bytes),
        ),
        *(web_routes() if settings.web else []),  # the playground; files read on first request
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={WireError: handle_wire_error, HTTPException: handle_http_error})
    app.state.sessions = manager
    app.state.settings = settings
    app.state.mcp = mcp
    return app
