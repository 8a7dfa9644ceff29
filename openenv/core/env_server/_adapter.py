"""An upstream-style env class served as one of ours.

``adapt`` builds, once per app, a subclass of our ``Environment`` (or
``AsyncEnvironment`` when the upstream class has native ``reset_async`` /
``step_async``) whose instances each hold one upstream env instance:

* ``reset(seed=, episode_id=, options=)`` calls theirs with ``seed``, ``episode_id``
  and the options as keywords, keeping only what their signature accepts (as upstream's
  server does);
* ``step(action)`` calls theirs; ``state()`` reads their ``state`` property;
* ``close()`` calls theirs; ``metadata()`` is their ``get_metadata()`` (asked once, of
  one instance built for it, then kept).

Their observations are our ``Observation`` models already (``types.Observation``
subclasses ours), so nothing is converted on the way out.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, model_validator

from ..._env import AsyncEnvironment, EnvClass, Environment, Execution
from ..._models import Action as _OurAction
from ..._models import EnvironmentMetadata as _OurMetadata
from . import interfaces

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
    return own is not None and own is not getattr(interfaces.Environment, name)


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
    from .mcp_types import CallToolAction, ListToolsAction
    from .types import Action

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


def _is_mcp_env(upstream: type[Any] | None) -> bool:
    from .mcp_environment import MCPEnvironment

    return upstream is not None and issubclass(upstream, MCPEnvironment)


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
    if _is_mcp_env(upstream):  # its own tools at /mcp, our bridge for the rest
        from ._mcp_endpoint import upstream_mcp_endpoint

        namespace["protocol_endpoints"] = (upstream_mcp_endpoint,)
    if base is _AsyncAdapter:
        namespace.update(_native_reset=native_reset, _native_step=native_step)
    else:
        own = getattr(upstream, "execution", None)
        if isinstance(own, Execution):
            namespace["execution"] = own
        elif getattr(upstream, "REQUIRES_SINGLE_THREAD_EXECUTOR", False):
            namespace["execution"] = Execution.DEDICATED_THREAD
    return type(name, (base,), namespace)
