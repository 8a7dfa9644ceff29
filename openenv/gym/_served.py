"""Serve any Gymnasium env: an ``Environment`` that wraps one gym env per session.

``gym_env_class("CartPole-v1")`` (a registered id, made with ``gymnasium.make``) or
``gym_env_class(MyGymEnv)`` (a ``gymnasium.Env`` subclass) returns an env class for
``create_app`` / ``openenv serve``. On the wire:

* action: ``{"action": <value>}`` checked against the action space;
* observation: ``{"observation": <gym obs>, "terminated", "info"}`` beside ``reward``,
  ``done`` (terminated or truncated) and ``truncated``;
* reset options other than ``seed`` reach the gym env's ``reset(options=...)``.

Arrays travel as lists in JSON and as bytes in msgpack frames (``_arrays``). The
action and observation spaces are published in ``/schema`` (``x-gym-space``), read
by ``RemoteEnv``. Constructor keyword arguments (``--env-kwargs``) go to
``gymnasium.make`` / the class.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import gymnasium
from gymnasium.spaces import Discrete
from pydantic import ConfigDict, Field

from .._env import Environment, Execution
from .._exceptions import ValidationFailed
from .._models import Action, Observation, State
from ._arrays import WireValue, to_wire
from ._spaces import from_wire, space_schema

#: ``/schema`` marks a served gym env with this key on the observation model.
GYM_MARK = "x-openenv-gym"


class GymAction(Action):
    """``{"action": <a value of the action space>}``."""

    action: WireValue


class GymObservation(Observation):
    """The gym observation, ``terminated`` and ``info``; reward and truncated beside it."""

    model_config = ConfigDict(json_schema_extra={GYM_MARK: True})

    observation: WireValue = None
    terminated: bool = False
    info: WireValue = Field(default_factory=dict)

    @classmethod
    def fast(cls, observation: Any, reward: float, terminated: bool, truncated: bool, info: Any) -> Any:
        """An instance built without validation (every field is the env's own output)
        and without ``model_construct``'s per-call default lookups: this is the hot
        path of a served gym env."""
        obs = cls.__new__(cls)
        values = {
            "done": terminated or truncated,
            "truncated": truncated,
            "reward": reward,
            "metadata": {},
            "observation": observation,
            "terminated": terminated,
            "info": info,
        }
        object.__setattr__(obs, "__dict__", values)
        object.__setattr__(obs, "__pydantic_fields_set__", set(values))
        object.__setattr__(obs, "__pydantic_extra__", None)
        object.__setattr__(obs, "__pydantic_private__", None)
        return obs

    def model_dump(self, *, mode: str = "python", exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        """As pydantic's, written out for the server's one call shape (the reply body)."""
        if kwargs or not (exclude is None or isinstance(exclude, set | frozenset)):
            return super().model_dump(mode=mode, exclude=exclude, **kwargs)
        binary = mode != "json"
        out = {k: v for k, v in self.__dict__.items() if not exclude or k not in exclude}
        if "observation" in out:
            out["observation"] = to_wire(out["observation"], binary)
        if "info" in out:
            out["info"] = to_wire(out["info"], binary)
        if "metadata" in out and mode == "json":
            out["metadata"] = to_wire(out["metadata"], False)
        return out


class GymEnvironment(Environment[GymAction, GymObservation, State]):
    """One gym env per session. Build subclasses with ``gym_env_class``.

    Calls run on the event loop (``Execution.INLINE``): gym envs compute, and a thread
    would not run that compute in parallel anyway. A slow env (rendering, a simulator
    process) says ``gym_env_class(..., execution=Execution.THREAD)``.
    """

    execution = Execution.INLINE
    gym_target: ClassVar[str | type[gymnasium.Env[Any, Any]]] = ""
    make_kwargs: ClassVar[dict[str, Any]] = {}
    _spaces: ClassVar[dict[str, gymnasium.Space[Any]]] = {}

    def __init__(self, resources: Any = None, **kwargs: Any) -> None:
        self.env = make(type(self).gym_target, {**type(self).make_kwargs, **kwargs})
        self._obs_model: type[GymObservation] = self.observation_model  # type: ignore[assignment]
        self._state = State()

    @classmethod
    def process_resources(cls, **env_kwargs: Any) -> contextlib.AbstractContextManager[Any]:
        """At startup: learn the spaces with the server's constructor arguments."""
        return _probe(cls, env_kwargs)

    @classmethod
    def spaces(cls) -> dict[str, gymnasium.Space[Any]]:
        """The action and observation spaces (from a probe env, made once)."""
        if not cls._spaces:
            _learn(cls, {})
        return cls._spaces

    def reset(self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None) -> Any:
        obs, info = self.env.reset(seed=seed, options=options or None)
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return self._observation(obs, 0.0, False, False, info)

    def step(self, action: GymAction) -> Any:
        value = _action_value(action.action, self.env.action_space)
        obs, reward, terminated, truncated, info = self.env.step(value)
        self._state.step_count += 1
        return self._observation(obs, float(reward), bool(terminated), bool(truncated), info)

    def _observation(self, obs: Any, reward: float, terminated: bool, truncated: bool, info: Any) -> Any:
        return self._obs_model.fast(obs, reward, terminated, truncated, info)

    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self.env.close()


def make(target: str | type[gymnasium.Env[Any, Any]], kwargs: dict[str, Any]) -> gymnasium.Env[Any, Any]:
    """``gymnasium.make`` (without its passive checker: the adapter checks actions) or
    the class itself."""
    if isinstance(target, str):
        return gymnasium.make(target, **{"disable_env_checker": True, **kwargs})
    return target(**kwargs)


@contextlib.contextmanager
def _probe(cls: type[GymEnvironment], env_kwargs: dict[str, Any]) -> Iterator[None]:
    _learn(cls, env_kwargs)
    yield None


def _learn(cls: type[GymEnvironment], env_kwargs: dict[str, Any]) -> None:
    env = make(cls.gym_target, {**cls.make_kwargs, **env_kwargs})
    try:
        cls._spaces = {"action": env.action_space, "observation": env.observation_space}
    finally:
        env.close()


def _action_value(raw: Any, space: gymnasium.Space[Any]) -> Any:
    if type(raw) is int and isinstance(space, Discrete):  # the common case, fast
        if space.start <= raw < space.start + space.n:
            return raw
        raise ValidationFailed(f"action {raw!r} is not in the action space {space}")
    try:
        value = from_wire(raw, space)
        ok = space.contains(value)
    except (TypeError, ValueError, KeyError) as exc:
        raise ValidationFailed(f"action {raw!r:.200} does not fit {space}: {exc}") from None
    if not ok:
        raise ValidationFailed(f"action {raw!r:.200} is not in the action space {space}")
    return value


def gym_env_class(
    target: str | type[gymnasium.Env[Any, Any]],
    *,
    execution: Execution = Execution.INLINE,
    **make_kwargs: Any,
) -> type[GymEnvironment]:
    """An env class serving the gym env ``target`` (a registered id or an Env subclass);
    ``make_kwargs`` go to ``gymnasium.make`` / the class (the server's ``env_kwargs``
    are added per session)."""
    if isinstance(target, str):
        gymnasium.spec(target)  # an unknown id fails here, with gymnasium's message
        name = target
    elif isinstance(target, type) and issubclass(target, gymnasium.Env):
        name = target.__name__
    else:
        raise TypeError(f"not a gym env id or gymnasium.Env subclass: {target!r}")

    holder: dict[str, type[GymEnvironment]] = {}

    def action_extra(schema: dict[str, Any]) -> None:
        schema["properties"]["action"] = space_schema(holder["cls"].spaces()["action"])

    def observation_extra(schema: dict[str, Any]) -> None:
        schema[GYM_MARK] = True
        schema["properties"]["observation"] = space_schema(holder["cls"].spaces()["observation"])

    action_model = type(
        "GymAction", (GymAction,), {"model_config": ConfigDict(json_schema_extra=action_extra)}
    )
    obs_model = type(
        "GymObservation", (GymObservation,), {"model_config": ConfigDict(json_schema_extra=observation_extra)}
    )
    cls = type(
        f"Gym{name.replace('-', '_').replace('/', '_')}",
        (GymEnvironment,),
        {
            "gym_target": target,
            "make_kwargs": dict(make_kwargs),
            "execution": execution,
            "env_name": name,
            "env_description": f"Gymnasium {name}",
            "action_model": action_model,
            "observation_model": obs_model,
            "_spaces": {},
            "__module__": __name__,
        },
    )
    holder["cls"] = cls
    return cls
