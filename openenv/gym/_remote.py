"""``RemoteEnv``: an env server driven as a ``gymnasium.Env``, over the sync client.

Spaces come from the server's ``/schema``: exact for gym envs served by
``openenv.gym`` (``x-gym-space``), derived from the models' JSON Schema for any other
env (the observation is then a ``Dict`` of its fields, the action a ``Dict`` of the
action's fields), or declared by the caller. ``info`` holds the gym env's ``info``
(served gym envs) or the observation's ``metadata`` and the fields no space covers.
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
from ._spaces import BASE_FIELDS, from_wire, schema_space


class RemoteSpec:
    """What ``/schema`` says about an env: its spaces and whether it is a served gym env."""

    def __init__(
        self,
        base_url: str,
        action_space: gymnasium.Space[Any] | None = None,
        observation_space: gymnasium.Space[Any] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        schema = fetch_schema(base_url, timeout_s)
        obs_schema = schema.get("observation", {})
        self.gym = bool(obs_schema.get(GYM_MARK))
        self.extra_fields: list[str] = []
        if self.gym:
            act, _ = schema_space(schema["action"]["properties"]["action"])
            obs, _ = schema_space(obs_schema["properties"]["observation"])
        else:
            act, _ = schema_space(schema.get("action", {}))
            obs, self.extra_fields = schema_space(obs_schema)
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
        info: dict[str, Any] = {"metadata": result.metadata}
        if isinstance(space, spaces.Dict):
            obs = {k: from_wire(body[k], s) for k, s in space.spaces.items()}
            info.update({k: body[k] for k in body if k not in space.spaces and k not in BASE_FIELDS})
            return obs, info
        return from_wire(body, space), info

    def action(self, action: Any) -> dict[str, Any]:
        """A gym action as the wire action."""
        if self.gym:
            return {"action": to_wire(action, binary=False)}
        wire = to_wire(action, binary=False)
        if not isinstance(wire, dict):
            raise TypeError(f"this env's action is an object; got {action!r}")
        return wire


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
        **client_kwargs: Any,
    ) -> None:
        from ..client._sync import EnvClient

        self.spec_ = RemoteSpec(url, action_space, observation_space)
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
        return self.spec_.observation(result)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        result = self.client.step(self.spec_.action(action))
        obs, info = self.spec_.observation(result)
        return obs, float(result.reward or 0.0), result.terminated, result.truncated, info

    def close(self) -> None:
        self.client.close()
        super().close()
