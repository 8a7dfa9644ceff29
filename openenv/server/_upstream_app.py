"""An env class of upstream's shape served by our server, with upstream's ``create_app``.

``adapt`` builds, once per app, a subclass of our ``Environment`` (or
``AsyncEnvironment`` when the upstream class has native ``reset_async`` /
``step_async``) whose instances each hold one upstream env instance:

* ``reset(seed=, episode_id=, options=)`` calls theirs with ``seed``, ``episode_id``
  and the options as keywords, keeping only what their signature accepts (as upstream's
  server does);
* ``step(action)`` calls theirs; ``state()`` reads their ``state`` property;
* ``close()`` calls theirs; ``metadata()`` is their ``get_metadata()`` (asked once, of
  one instance built for it, then kept);
* an env class that names ``protocol_endpoints`` (an upstream ``MCPEnvironment``: its
  own tools at ``/mcp``) gets them plugged in.

Their observations are our ``Observation`` models already (``Observation`` of
``_upstream_models`` subclasses ours), so nothing is converted on the way out.

``upstream_app(EnvClass, ActionCls, ObservationCls, ...)`` (upstream's
``create_fastapi_app``; ``create_app`` adds the Gradio arguments, ignored) returns our
app (``openenv.server.create_app``) serving the adapter: the same routes, schemas,
error shapes and WebSocket protocol as upstream 0.10, at our server's speed. Settings
map as follows:

* ``max_concurrent_envs`` / ``concurrency_config.max_concurrent_envs``: the session
  limit. More than one for an env without ``SUPPORTS_CONCURRENT_SESSIONS`` raises
  ``ConcurrencyConfigurationError`` (as upstream). Neither given: one session for such
  an env (as upstream), our server's limit (``OPENENV_MAX_SESSIONS``, 1024) for an env
  that supports concurrent sessions (upstream: one);
* ``concurrency_config.session_timeout``: the idle timeout (None: the server's);
* ``mode`` / ``OPENENV_MODE``: ``production`` drops ``/reset``, ``/step`` and ``/state``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import os
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, model_validator

from .._env import AsyncEnvironment, EnvClass, Environment, Execution
from .._models import Action as _OurAction
from .._models import EnvironmentMetadata as _OurMetadata
from .._protocol import observation_data
from . import _upstream_env
from . import create_app as _create_app  # through the package: a missing extra is one clear error
from ._fastapi_style import CompatApp
from ._settings import ServerSettings
from ._upstream_models import (
    Action,
    CallToolAction,
    ConcurrencyConfig,
    ConcurrencyConfigurationError,
    ListToolsAction,
    ServerMode,
    State,
)

__all__ = [
    "UpstreamEnvServer",
    "accepting_mcp_actions",
    "adapt",
    "deserialize_action",
    "deserialize_action_with_preprocessing",
    "serialize_observation",
    "upstream_app",
]

_MCP_ACTION_NAMES = ("ListToolsAction", "CallToolAction")


def _env_type(factory: Callable[..., Any]) -> type[Any] | None:
    """The class a factory builds, when it says (a class, or a partial of one)."""
    while isinstance(factory, functools.partial):
        factory = factory.func
    return factory if inspect.isclass(factory) else None


def _overrides(cls: type[Any] | None, name: str) -> bool:
    if cls is None:
        return False
    own = getattr(cls, name, None)
    return own is not None and own is not getattr(_upstream_env.Environment, name)


class _Accepts:
    """Which keywords one method takes (all, when it has ``**kwargs``)."""

    __slots__ = ("any", "names")

    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            params = ()  # type: ignore[assignment]
            self.any = True
        else:
            self.any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        self.names = frozenset(p.name for p in params)

    def keep(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.any:
            return kwargs
        return {k: v for k, v in kwargs.items() if k in self.names}


def _reset_kwargs(seed: int | None, episode_id: str | None, options: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = dict(options) if isinstance(options, dict) else {}
    if seed is not None:
        kwargs["seed"] = seed
    if episode_id is not None:
        kwargs["episode_id"] = episode_id
    return kwargs


def accepting_mcp_actions(action_cls: type[Any]) -> type[Any]:
    """The action model the server validates steps with (one per declared class)."""
    return _accepting(action_cls)  # type: ignore[arg-type]  # a class is hashable


@functools.cache
def _accepting(action_cls: type[Any]) -> type[Any]:
    """The action model the server validates steps with.

    Upstream recognises ``list_tools`` / ``call_tool`` payloads whatever the declared
    action class when that class is the base ``Action`` or an MCP action. Here that is a
    subclass of the declared class (same name, same schema) whose validator hands those
    payloads to the MCP action models.
    """
    if action_cls not in (Action, _OurAction, ListToolsAction, CallToolAction):
        return action_cls
    mcp_models: dict[str, type[BaseModel]] = {"list_tools": ListToolsAction, "call_tool": CallToolAction}

    def dispatch(cls: type[Any], data: Any, handler: Any) -> Any:
        if isinstance(data, dict):
            model = mcp_models.get(data.get("type"))  # type: ignore[arg-type]
            if model is not None and model is not action_cls:
                return model.model_validate(data)
        return handler(data)

    namespace = {
        "__module__": action_cls.__module__,
        "__doc__": action_cls.__doc__,
        "__qualname__": action_cls.__qualname__,
        "_mcp_dispatch": model_validator(mode="wrap")(classmethod(dispatch)),  # type: ignore[arg-type]
    }
    return type(action_cls.__name__, (action_cls,), namespace)


# --- upstream's serialization helpers (the action model above, web-form conversions) ---

def deserialize_action(action_data: dict[str, Any], action_cls: type[Any]) -> Any:
    """Validate ``action_data`` as ``action_cls`` (MCP payloads recognised by ``type``
    when it is the base ``Action`` or an MCP action, as the server does)."""
    return accepting_mcp_actions(action_cls).model_validate(action_data)


def deserialize_action_with_preprocessing(action_data: dict[str, Any], action_cls: type[Any]) -> Any:
    """As ``deserialize_action``, after the conversions web forms need: JSON-string tool
    arguments parsed, ``tokens`` lists made tensors (when torch is there), a string
    ``action_id`` made an int."""
    data = dict(action_data)
    if data.get("type") == "call_tool" and isinstance(data.get("arguments"), str):
        with contextlib.suppress(ValueError):
            data["arguments"] = json.loads(data["arguments"])
    if data.get("type") in ("list_tools", "call_tool"):
        return deserialize_action(data, action_cls)
    tokens = data.get("tokens")
    if isinstance(tokens, str):
        try:
            tokens = json.loads(tokens)
        except ValueError:
            tokens = []
    if isinstance(tokens, list):
        data["tokens"] = _tensor(tokens)
    action_id = data.get("action_id")
    if isinstance(action_id, str):
        with contextlib.suppress(ValueError):
            data["action_id"] = int(action_id)
    return deserialize_action(data, action_cls)


def _tensor(values: list[Any]) -> Any:
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.long)


def serialize_observation(observation: Any) -> dict[str, Any]:
    """``{"observation", "reward", "done"}`` plus ``metadata`` when it is not empty."""
    return observation_data(observation, binary=False, extended=False)


class _Held:
    """What both adapter kinds share: the wrapped instance and the signatures."""

    upstream_class: ClassVar[type[Any] | None] = None
    factory: ClassVar[Callable[..., Any]]
    _reset_accepts: ClassVar[_Accepts | None] = None
    _metadata: ClassVar[_OurMetadata | None] = None
    env: Any

    def __init__(self, **env_kwargs: Any) -> None:
        self.env = type(self).factory(**env_kwargs)

    def _reset_call(self, fn: Callable[..., Any], seed: Any, episode_id: Any, options: Any) -> Any:
        cls = type(self)
        accepts = cls._reset_accepts
        if accepts is None or cls.upstream_class is None:  # a factory: ask this instance
            accepts = _Accepts(fn)
            if cls.upstream_class is not None:
                cls._reset_accepts = accepts
        return fn(**accepts.keep(_reset_kwargs(seed, episode_id, options)))

    @classmethod
    def metadata(cls) -> _OurMetadata:
        if cls._metadata is None:
            env = cls.factory()
            try:
                meta = env.get_metadata()
            finally:
                env.close()
            cls._metadata = (
                meta
                if isinstance(meta, _OurMetadata)
                else _OurMetadata.model_validate(meta.model_dump() if isinstance(meta, BaseModel) else meta)
            )
        return cls._metadata


class _SyncAdapter(_Held, Environment[Any, Any, Any]):
    def reset(self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None) -> Any:
        return self._reset_call(self.env.reset, seed, episode_id, options)

    def step(self, action: Any) -> Any:
        return self.env.step(action)

    def state(self) -> Any:
        return self.env.state

    def close(self) -> None:
        self.env.close()


class _AsyncAdapter(_Held, AsyncEnvironment[Any, Any, Any]):
    """For classes with a native ``reset_async`` or ``step_async``: those run on the
    event loop; the sync methods they leave alone run on worker threads, as upstream."""

    _native_reset: ClassVar[bool] = False
    _native_step: ClassVar[bool] = False

    async def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None
    ) -> Any:
        if self._native_reset:
            return await self._reset_call(self.env.reset_async, seed, episode_id, options)
        return await asyncio.to_thread(self._reset_call, self.env.reset, seed, episode_id, options)

    async def step(self, action: Any) -> Any:
        if self._native_step:
            return await self.env.step_async(action)
        return await asyncio.to_thread(self.env.step, action)

    async def state(self) -> Any:
        return self.env.state

    async def close(self) -> None:
        await asyncio.to_thread(self.env.close)


def adapt(
    factory: Callable[..., Any],
    action_cls: type[Any],
    observation_cls: type[Any],
    state_cls: type[Any],
    *,
    name: str,
    max_sessions: int | None,
) -> EnvClass:
    """Our env class serving ``factory``'s upstream-style envs."""
    upstream = _env_type(factory)
    native_reset, native_step = _overrides(upstream, "reset_async"), _overrides(upstream, "step_async")
    base: type[Any] = _AsyncAdapter if (native_reset or native_step) else _SyncAdapter
    doc = (upstream.__doc__ if upstream is not None else None) or f"{name} (an upstream-style env)"
    namespace: dict[str, Any] = {
        "__doc__": doc,
        "__module__": __name__,
        "upstream_class": upstream,
        "factory": staticmethod(factory),
        "action_model": accepting_mcp_actions(action_cls),
        "observation_model": observation_cls,
        "state_model": state_cls,
        "max_sessions": max_sessions,
        "env_name": name,
    }
    endpoints = getattr(upstream, "protocol_endpoints", None)
    if endpoints:  # an MCPEnvironment: its own tools at /mcp
        namespace["protocol_endpoints"] = tuple(endpoints)
    if base is _AsyncAdapter:
        namespace.update(_native_reset=native_reset, _native_step=native_step)
    else:
        own = getattr(upstream, "execution", None)
        if isinstance(own, Execution):
            namespace["execution"] = own
        elif getattr(upstream, "REQUIRES_SINGLE_THREAD_EXECUTOR", False):
            namespace["execution"] = Execution.DEDICATED_THREAD
    return type(name, (base,), namespace)


_SIMULATION_ONLY = frozenset({"/reset", "/step", "/state"})


class UpstreamEnvServer:
    """Upstream's server object (``HTTPEnvServer``): the env factory, its models and its concurrency.

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


def upstream_app(
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
    """Our app (a ``CompatApp``: upstream's ``@app.get``...) serving an upstream-style env class
    or factory; upstream's ``create_fastapi_app`` and ``create_app``."""
    server = UpstreamEnvServer(
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
