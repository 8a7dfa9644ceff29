"""Upstream's ``create_app``, served by our server.

``create_app(EnvClass, ActionCls, ObservationCls, ...)`` keeps upstream's signature and
returns our app (``openenv.server.create_app``) serving an adapter of the env class
(``_adapter``): the same routes, schemas, error shapes and WebSocket protocol as
upstream 0.10, at our server's speed. Settings map as follows:

* ``max_concurrent_envs`` / ``concurrency_config.max_concurrent_envs``: the session
  limit. More than one for an env without ``SUPPORTS_CONCURRENT_SESSIONS`` raises
  ``ConcurrencyConfigurationError`` (as upstream). Neither given: one session for such
  an env (as upstream), our server's limit (``OPENENV_MAX_SESSIONS``, 1024) for an env
  that supports concurrent sessions (upstream: one);
* ``concurrency_config.session_timeout``: the idle timeout (None: the server's);
* ``mode`` / ``OPENENV_MODE``: ``production`` drops ``/reset``, ``/step`` and ``/state``;
* the Gradio arguments are accepted and ignored: our web playground is at ``/web``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...server import ServerSettings
from ...server import create_app as _create_app
from ...server._fastapi_style import CompatApp
from ._adapter import adapt
from .exceptions import ConcurrencyConfigurationError
from .types import ConcurrencyConfig, ServerMode, State

if TYPE_CHECKING:
    from ..._env import EnvClass

__all__ = ["HTTPEnvServer", "create_app", "create_fastapi_app"]

_SIMULATION_ONLY = frozenset({"/reset", "/step", "/state"})


class HTTPEnvServer:
    """Upstream's server object: the env factory, its models and its concurrency.

    ``app()`` builds the app; ``register_routes(app)`` serves this env under an app of
    your own (ours or FastAPI), after the routes it already has.
    """

    def __init__(
        self,
        env: Callable[..., Any],
        action_cls: type[Any],
        observation_cls: type[Any],
        max_concurrent_envs: int | None = None,
        concurrency_config: ConcurrencyConfig | None = None,
        env_name: str | None = None,
        state_cls: type[Any] = State,
        *,
        reset_observation_cls: type[Any] | None = None,
    ) -> None:
        if not callable(env):
            raise TypeError(
                f"env must be a callable (class or factory function), got {type(env)}. Pass the "
                "environment class (e.g., MyEnvironment) not an instance (e.g., MyEnvironment())."
            )
        if max_concurrent_envs is not None and concurrency_config is not None:
            raise ValueError(
                "Cannot specify both 'max_concurrent_envs' and 'concurrency_config'. "
                "Please use only one method to configure concurrency."
            )
        if concurrency_config is None and max_concurrent_envs is not None:
            concurrency_config = ConcurrencyConfig(max_concurrent_envs=max_concurrent_envs)
        self._env_factory = env
        self.action_cls = action_cls
        self.observation_cls = observation_cls
        self.reset_observation_cls = reset_observation_cls or observation_cls
        self.state_cls = state_cls
        self.env_name = env_name or getattr(env, "__name__", "environment")
        self._explicit = concurrency_config
        self._concurrency_config = concurrency_config or ConcurrencyConfig()
        self._max_sessions = self._session_limit()
        self.adapter: EnvClass = adapt(
            env,
            action_cls,
            observation_cls,
            state_cls,
            name=str(getattr(env, "__name__", self.env_name)),
            max_sessions=self._max_sessions,
        )

    def _env_type(self) -> type[Any]:
        """The env class: the factory itself, or (as upstream) the type of one instance."""
        cls = getattr(self, "_type", None) or _built_class(self._env_factory)
        if cls is None:
            probe = self._env_factory()
            cls = type(probe)
            probe.close()
        self._type: type[Any] = cls
        return cls

    def _supports_concurrency(self) -> bool:
        return bool(getattr(self._env_type(), "SUPPORTS_CONCURRENT_SESSIONS", False))

    def _session_limit(self) -> int | None:
        """The adapter's session limit: the one asked for, else 1 or the server's."""
        asked = self._explicit.max_concurrent_envs if self._explicit is not None else None
        if asked is not None and asked > 1 and not self._supports_concurrency():
            raise ConcurrencyConfigurationError(self._env_type().__name__, asked)
        if asked is not None:
            return asked
        known = _built_class(self._env_factory)  # a bare factory is not probed: one session
        return None if getattr(known, "SUPPORTS_CONCURRENT_SESSIONS", False) else 1

    @property
    def concurrency_config(self) -> ConcurrencyConfig:
        return self._concurrency_config

    @property
    def max_concurrent_envs(self) -> int:
        return self._max_sessions or ServerSettings.from_env().max_sessions

    @property
    def is_concurrency_safe(self) -> bool:
        return self._supports_concurrency()

    def settings(self) -> ServerSettings:
        timeout = self._concurrency_config.session_timeout
        return ServerSettings.from_env(max_sessions=self._max_sessions, idle_timeout_s=timeout)

    def app(self, mode: ServerMode | str | None = None) -> CompatApp:
        """Our app serving this env, with upstream's app methods (``CompatApp``)."""
        app: CompatApp = _create_app(self.adapter, settings=self.settings(), app_class=CompatApp)  # type: ignore[assignment]
        app.state.env_class = self.adapter  # what `openenv serve DIR` serves
        if _mode(mode) is ServerMode.PRODUCTION:
            app.router.routes[:] = [
                r for r in app.router.routes if getattr(r, "path", None) not in _SIMULATION_ONLY
            ]
        return app

    def register_routes(self, app: Any, mode: ServerMode | str = ServerMode.SIMULATION) -> None:
        """Serve this env under ``app``, after its own routes.

        The env app's startup work (the idle reaper) runs only if ``app`` runs the
        mounted app's lifespan; prefer ``create_app``.
        """
        from starlette.routing import Mount

        app.router.routes.append(Mount("", app=self.app(mode)))


def _built_class(factory: Callable[..., Any]) -> type[Any] | None:
    from ._adapter import _env_type

    return _env_type(factory)


def _mode(mode: ServerMode | str | None) -> ServerMode:
    raw = mode if mode is not None else os.environ.get("OPENENV_MODE", ServerMode.SIMULATION.value)
    if isinstance(raw, ServerMode):
        return raw
    try:
        return ServerMode(str(raw).lower())
    except ValueError:
        valid = [m.value for m in ServerMode]
        raise ValueError(f"Invalid mode: '{raw}'. Must be one of: {valid}") from None


def create_fastapi_app(
    env: Callable[..., Any],
    action_cls: type[Any],
    observation_cls: type[Any],
    max_concurrent_envs: int | None = None,
    concurrency_config: ConcurrencyConfig | None = None,
    env_name: str | None = None,
    state_cls: type[Any] = State,
    *,
    mode: ServerMode | str | None = None,
    reset_observation_cls: type[Any] | None = None,
) -> CompatApp:
    """Upstream's ``create_fastapi_app``: the same app as ``create_app`` (ours is not FastAPI)."""
    server = HTTPEnvServer(
        env,
        action_cls,
        observation_cls,
        max_concurrent_envs,
        concurrency_config,
        env_name=env_name,
        state_cls=state_cls,
        reset_observation_cls=reset_observation_cls,
    )
    return server.app(mode)


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
        env,
        action_cls,
        observation_cls,
        max_concurrent_envs,
        concurrency_config,
        env_name=env_name,
        state_cls=state_cls,
        mode=mode,
        reset_observation_cls=reset_observation_cls,
    )
