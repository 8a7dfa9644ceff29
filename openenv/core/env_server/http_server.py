"""Upstream's ``create_app`` and ``HTTPEnvServer``, served by our server
(``openenv.server._upstream_app``: the settings and how they map are said there)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...server._fastapi_style import CompatApp
from ...server._upstream_app import UpstreamEnvServer
from ...server._upstream_app import upstream_app as create_fastapi_app
from ...server._upstream_models import ConcurrencyConfig, ServerMode, State

__all__ = ["HTTPEnvServer", "create_app", "create_fastapi_app"]


class HTTPEnvServer(UpstreamEnvServer):
    """Upstream's server object: ``app()`` builds the app; ``register_routes(app)``
    serves this env under an app of your own, after the routes it already has."""


def create_app(
    env: Callable[..., Any],
    action_cls: type[Any],
    observation_cls: type[Any],
    env_name: str | None = None,
    max_concurrent_envs: int | None = None,
    concurrency_config: ConcurrencyConfig | None = None,
    gradio_builder: Callable[..., Any] | None = None,
    custom_tab_name: str = "Custom",
    custom_tab_primary: bool = False,
    show_default_tab: bool = True,
    title_override: str | None = None,
    state_cls: type[Any] = State,
    *,
    mode: ServerMode | str | None = None,
    reset_observation_cls: type[Any] | None = None,
) -> CompatApp:
    """Serve an upstream-style env class (or factory) with our server.

    Returns our Starlette app with upstream's app methods (``@app.get``...). The Gradio
    arguments are ignored (our playground is at ``/web``; ``OPENENV_WEB=false`` hides it).
    """
    return create_fastapi_app(
        env, action_cls, observation_cls, max_concurrent_envs, concurrency_config, env_name=env_name,
        state_cls=state_cls, mode=mode, reset_observation_cls=reset_observation_cls,
    )  # fmt: skip
