"""``RemoteEnv``: an env server driven as a ``gymnasium.Env``, over the sync client.

Spaces come from the server's ``/schema``: exact for gym envs served by
``openenv.gym`` (``x-gym-space``), derived from the models' JSON Schema for any other
env (the observation is then a ``Dict`` of its fields, the action a ``Dict`` of the
action's fields, or a ``TaggedUnion`` of its members), or declared by the caller.
``info`` holds the gym env's ``info`` (served gym envs) or the observation's
``metadata`` and the fields no space covers. Timing fields (``VOLATILE_FIELDS``, e.g.
the coding and terminal envs' ``duration_s``) differ from run to run, so they are in
neither, at any depth (gymnasium's checker wants equal seeds to give equal observations and info):
``RemoteEnv.last_observation`` holds the whole observation as sent.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import gymnasium
from gymnasium import spaces

from .._models import StepResult
from ._arrays import to_wire
from ._served import GYM_MARK
from ._spaces import BASE_FIELDS, TaggedUnion, from_wire, json_booleans, schema_space

#: Observation fields that measure the run rather than the episode (wall time).
VOLATILE_FIELDS = frozenset({"duration_s"})


class RemoteSpec:
    """What ``/schema`` says about an env: its spaces and whether it is a served gym env."""

    def __init__(
        self,
        base_url: str,
        action_space: gymnasium.Space[Any] | None = None,
        observation_space: gymnasium.Space[Any] | None = None,
        timeout_s: float = 30.0,
        volatile_fields: frozenset[str] = VOLATILE_FIELDS,
    ) -> None:
        schema = fetch_schema(base_url, timeout_s)
        self.volatile = frozenset(volatile_fields)
        obs_schema = schema.get("observation", {})
        self.gym = bool(obs_schema.get(GYM_MARK))
        self.extra_fields: list[str] = []
        if self.gym:
            act, _ = schema_space(schema["action"]["properties"]["action"])
            obs, _ = schema_space(obs_schema["properties"]["observation"])
        else:
            act, _ = schema_space(schema.get("action", {}))
            obs, self.extra_fields = schema_space(obs_schema, skip=BASE_FIELDS | self.volatile)
        act, obs = action_space or act, observation_space or obs
        if act is None or obs is None:
            raise ValueError(f"{base_url}: cannot derive the spaces from /schema; declare them")
        self.action_space: gymnasium.Space[Any] = act
        self.observation_space: gymnasium.Space[Any] = obs

    def observation(self, result: StepResult[Any]) -> tuple[Any, dict[str, Any]]:
        """The gym observation and info of one client result."""
        body = result.observation
        if self.gym:
            return from_wire(body["observation"], self.observation_space), dict(body.get("info") or {})
        space = self.observation_space
        info: dict[str, Any] = {"metadata": without(result.metadata, self.volatile)}
        if isinstance(space, spaces.Dict):
            obs = {k: from_wire(body[k], s) for k, s in space.spaces.items()}
            skip = BASE_FIELDS | self.volatile
            rest = [k for k in body if k not in space.spaces and k not in skip]
            info.update({k: without(body[k], self.volatile) for k in rest})
            return obs, info
        return from_wire(body, space), info

    def action(self, action: Any) -> dict[str, Any]:
        """A gym action as the wire action."""
        if self.gym:
            return {"action": to_wire(action, binary=False)}
        if isinstance(self.action_space, TaggedUnion):
            action = self.action_space.wire(action)
        else:
            action = json_booleans(action, self.action_space)
        wire = to_wire(action, binary=False)
        if not isinstance(wire, dict):
            raise TypeError(f"this env's action is an object; got {action!r}")
        return wire


def without(value: Any, keys: frozenset[str]) -> Any:
    """``value`` with ``keys`` removed from every dict in it, at any depth."""
    if isinstance(value, dict):
        return {k: without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without(v, keys) for v in value]
    return value


def fetch_schema(base_url: str, timeout_s: float) -> dict[str, Any]:
    url = base_url.rstrip("/")
    url = "http" + url[2:] if url.startswith("ws") else url
    url = url.removesuffix("/ws")
    with urllib.request.urlopen(f"{url}/schema", timeout=timeout_s) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


class RemoteEnv(gymnasium.Env[Any, Any]):
    """A remote env as a Gymnasium env (``gymnasium.make("openenv/Remote-v0", url=...)``).

    Args:
        url: the server (``http://127.0.0.1:8000``).
        action_space, observation_space: declare the spaces instead of deriving them.
        binary: msgpack frames (arrays travel as bytes); default True.
        reset_options: sent with every reset (e.g. a task ``split``), merged under
            ``reset(options=...)``.
        volatile_fields: observation fields kept out of the observation and ``info``
            (default ``VOLATILE_FIELDS``); ``last_observation`` still has them.
        client_kwargs: more ``EnvClient`` arguments (``timeout_s``, ``headers``...).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        url: str,
        *,
        action_space: gymnasium.Space[Any] | None = None,
        observation_space: gymnasium.Space[Any] | None = None,
        binary: bool = True,
        reset_options: dict[str, Any] | None = None,
        render_mode: str | None = None,
        volatile_fields: frozenset[str] = VOLATILE_FIELDS,
        **client_kwargs: Any,
    ) -> None:
        from ..client._sync import EnvClient

        self.spec_ = RemoteSpec(url, action_space, observation_space, volatile_fields=volatile_fields)
        #: The latest observation as the server sent it (every field, timings included).
        self.last_observation: Any = None
        self.action_space = self.spec_.action_space
        self.observation_space = self.spec_.observation_space
        self.render_mode = render_mode
        self.reset_options = dict(reset_options or {})
        self.client: Any = EnvClient(url, binary=binary, **client_kwargs)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:  # seed the server from our generator: reproducible after one seed
            seed = int(self.np_random.integers(0, 2**31 - 1))
        result = self.client.reset(seed=seed, **{**self.reset_options, **(options or {})})
        self.last_observation = result.observation
        return self.spec_.observation(result)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        result = self.client.step(self.spec_.action(action))
        self.last_observation = result.observation
        obs, info = self.spec_.observation(result)
        return obs, float(result.reward or 0.0), result.terminated, result.truncated, info

    def close(self) -> None:
        self.client.close()
        super().close()
