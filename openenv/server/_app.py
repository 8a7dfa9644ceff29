"""``create_app``: wire the routes, the WebSocket endpoint and the session manager."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import WebSocketRoute

from .._env import AnyEnv, AsyncEnvironment, EnvClass, Environment
from .._exceptions import WireError
from .._protocol import request_adapter
from ._admission import Admission
from ._http import HttpApi, handle_http_error, handle_wire_error
from ._lifespan import AppLifespan
from ._mounts import EndpointFactory, Mounts, installed_endpoints
from ._origin import OriginPolicy, split_list
from ._root import OpenApiDocument, root_routes
from ._runner import EnvRunner
from ._sessions import SessionManager
from ._settings import ServerSettings
from ._tasks import task_routes
from ._web import web_routes
from ._ws import make_ws_endpoint


def create_app(
    env: EnvClass | Callable[..., AnyEnv],
    *,
    env_class: EnvClass | None = None,
    settings: ServerSettings | None = None,
    env_kwargs: dict[str, Any] | None = None,
    endpoints: Sequence[EndpointFactory] | None = None,
    app_class: type[Starlette] = Starlette,
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
        endpoints: factories of the protocol endpoints to serve beside the env (see
            ``ProtocolEndpoint``); default those of the ``openenv.endpoints`` entry
            points (``/mcp`` when the ``mcp`` extra is installed), unless the env class
            names its own in ``protocol_endpoints``. ``()``: none.
        app_class: the ``Starlette`` subclass to build (``openenv.core`` passes one with
            FastAPI's route decorators, for upstream env apps).

    The app exposes ``app.state.sessions`` (the ``SessionManager``) for tests and tools.
    """
    env_class = _env_class(env, env_class)
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
    manager = SessionManager(
        runner, settings.max_sessions, settings.idle_timeout_s, settings.client_quota
    )
    api = HttpApi(env_class, manager)
    if endpoints is None:  # the env class may name its own (an upstream MCP env does)
        endpoints = getattr(env_class, "protocol_endpoints", None)
    factories = installed_endpoints() if endpoints is None else endpoints
    mounts = Mounts.build(factories, env_class, manager, settings)
    openapi = OpenApiDocument(env_class, api.openapi_schemas)
    ws = make_ws_endpoint(manager, request_adapter(env_class.action_model), mounts, settings.max_frame_bytes)
    routes = [
        *mounts.routes,  # before api's POST /mcp stub
        *api.routes(),
        *task_routes(env_class),
        openapi.route(),
        *root_routes(env_class, openapi),  # GET / and /docs
        WebSocketRoute("/ws", ws),
        *(web_routes() if settings.web else []),  # the playground; files read on first request
    ]
    app = app_class(
        routes=routes,
        lifespan=AppLifespan(env_class, runner, manager, mounts),
        exception_handlers={WireError: handle_wire_error, HTTPException: handle_http_error},
        middleware=[Middleware(
            Admission, auth_token=settings.auth_token, max_body_bytes=settings.max_frame_bytes,
            origins=OriginPolicy(
                settings.host, split_list(settings.allowed_hosts), split_list(settings.allowed_origins)
            ),
        )],
    )
    app.state.sessions = manager
    app.state.settings = settings
    app.state.mounts = mounts
    return app


def _env_class(env: EnvClass | Callable[..., AnyEnv], env_class: EnvClass | None) -> EnvClass:
    """The env class behind ``create_app``'s ``env`` (a class or a factory)."""
    if inspect.isclass(env):
        if not issubclass(env, Environment | AsyncEnvironment):
            raise TypeError(f"{env.__name__} is not an Environment or AsyncEnvironment subclass")
        return env_class or env
    if not callable(env):
        raise TypeError(
            "create_app() takes an env class or a factory, not an instance: each session gets its own env"
        )
    if env_class is None:
        raise TypeError("create_app(factory) needs env_class= to know the env's models")
    return env_class
