"""An env as a TRL ``environment_factory`` class: ``trl_environment(url, MODELS)``.

The class's tools are the env's actions, derived from the action model exactly as the MCP
bridge derives its tools (``openenv.mcp._tools.ActionTools``); each instance drives one
episode through ``EnvClient``. For tokenizers without a tool-calling chat template, see
``TrlRollout`` (``_trl_rollout.py``).

Needs the ``train`` extra (``trl``) and the ``mcp`` extra (the tool derivation).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._exceptions import OpenEnvError
from .._extras import require
from .._models import EnvModels
from ..client import EnvClient
from ._text import observation_text

_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
#: Method names TRL gives a meaning of its own; an action tool may not take them.
_RESERVED = ("reset", "get_reward")


def _hint(prop: Mapping[str, Any]) -> Any:
    """A Python type for one JSON Schema property (what TRL's tool schema is built from)."""
    options = [p for p in prop.get("anyOf", []) if isinstance(p, Mapping)]
    if options:
        kinds = [_JSON_TYPES.get(str(p.get("type")), str) for p in options if p.get("type") != "null"]
        hint: Any = kinds[0] if len(kinds) == 1 else str
        return hint | None if len(kinds) < len(options) else hint
    if "$ref" in prop or "properties" in prop:
        return dict
    return _JSON_TYPES.get(str(prop.get("type")), str)


def _tool_method(name: str, description: str, schema: Mapping[str, Any]) -> Callable[..., str]:
    """A method ``name(self, **arguments) -> str`` with a signature and a Google-style
    docstring that ``transformers.utils.get_json_schema`` turns back into ``schema``."""
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))

    def tool(self: Any, **arguments: Any) -> str:
        return str(self._call_tool(name, arguments))

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for arg in sorted(props, key=lambda k: k not in required):
        prop = props[arg]
        annotations[arg] = _hint(prop)
        default = inspect.Parameter.empty if arg in required else None
        params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default))
        text = str(prop.get("description") or prop.get("title") or arg).replace("\n", " ")
        lines.append(f"    {arg}: {text}")
    annotations["return"] = str
    tool.__name__ = tool.__qualname__ = name
    tool.__annotations__ = annotations
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(annotation=annotations.get(p.name, p.annotation)) for p in params], return_annotation=str
    )
    args = "\n\nArgs:\n" + "\n".join(lines) if lines else ""
    tool.__doc__ = (
        f"{description}{args}\n\nReturns:\n    The env's observation, reward and done flag as JSON."
    )
    return tool


def _action_tools(models: EnvModels[Any, Any, Any]) -> Any:
    require("mcp_types", extra="mcp", feature="openenv.train TRL tools")
    from ..mcp._tools import ActionTools

    if not (isinstance(models.action, type) or hasattr(models.action, "__origin__")):
        raise TypeError("trl_environment needs the env's typed models (its EnvModels), not the generic ones")
    return ActionTools(models.action, default_name="step")


def _render(result: Any, observation_result: Callable[..., Any]) -> str:
    extra = {"reward": result.reward, "done": result.done}
    text: str = observation_result(result.observation, extra).content[0].text
    return text


def trl_environment(
    base_url: str,
    models: EnvModels[Any, Any, Any],
    *,
    reset_options: Mapping[str, Any] | None = None,
    option_columns: Iterable[str] = (),
    timeout_s: float = 30.0,
    transport: Any = None,
    name: str | None = None,
) -> type:
    """A TRL ``environment_factory`` class for the env served at ``base_url``.

    Each instance holds one connection. TRL calls ``reset(**row)`` with the dataset row:
    the row's ``seed`` and its ``option_columns`` (over ``reset_options``) reach the
    env's reset, and the first observation's text (RFC 0002 ``prompt``/``messages``, else
    its JSON) is returned for TRL to append to the prompt. One method per action tool
    steps the env and returns the observation as JSON (the MCP bridge's rendering, plus
    ``reward`` and ``done``); ``get_reward()`` is the episode's return so far.
    ``cls.close_all()`` closes every instance's connection (TRL keeps its pool open).
    """
    from ..mcp._tools import observation_result

    tools = _action_tools(models)
    for spec in tools.specs.values():
        if spec.name in _RESERVED or spec.name.startswith("_"):
            raise TypeError(f"action tool name {spec.name!r} clashes with TRL's environment methods")
    defaults = dict(reset_options or {})
    columns = tuple(option_columns)
    instances: weakref.WeakSet[Any] = weakref.WeakSet()

    def __init__(self: Any) -> None:
        self._client = EnvClient(base_url, models, timeout_s=timeout_s, transport=transport)
        self._return = 0.0
        self._done = False
        instances.add(self)

    def reset(self: Any, **row: Any) -> str | None:
        options = {**defaults, **{k: row[k] for k in columns if k in row}}
        seed = row.get("seed")
        result = self._client.reset(seed=None if seed is None else int(seed), **options)
        self._return, self._done = 0.0, False
        obs = result.observation
        data = obs.model_dump(mode="json") if hasattr(obs, "model_dump") else dict(obs)
        try:
            text = observation_text(data)
        except OpenEnvError:
            text = _render(result, observation_result)
        return text or None

    def _call_tool(self: Any, tool: str, arguments: dict[str, Any]) -> str:
        if self._done:
            raise RuntimeError("the episode is over; no more actions")
        action = tools.build(tool, {k: v for k, v in arguments.items() if v is not None})
        result = self._client.step(action)
        self._return += float(result.reward or 0.0)
        self._done = result.done
        return _render(result, observation_result)

    def get_reward(self: Any) -> float:
        return float(self._return)

    def close(self: Any) -> None:
        self._client.close()

    def close_all(cls: Any) -> None:
        for instance in list(instances):
            instance._client.close()

    body: dict[str, Any] = {
        "__init__": __init__,
        "__del__": lambda self: self._client.close(),
        "reset": reset,
        "get_reward": get_reward,
        "_call_tool": _call_tool,
        "_close": close,
        "close_all": classmethod(close_all),  # a bound method on the class: TRL does not list it as a tool
        "__doc__": f"TRL environment for the env at {base_url} (tools: {', '.join(tools.specs)}).",
    }
    for spec in tools.specs.values():
        body[spec.name] = _tool_method(spec.name, spec.description, spec.input_schema)
    cls_name = name or f"{getattr(models.action, '__name__', 'Env').removesuffix('Action')}TrlEnv"
    return type(cls_name, (), body)
