"""Policies named on the command line.

null | random | oracle
openai:MODEL[?base_url=URL&api_key_env=VAR&temperature=T&max_tokens=N&logprobs=1&token_ids=1&tools=1]
anthropic:MODEL[?base_url=URL&api_key_env=VAR&temperature=T&max_tokens=N]
local:CHECKPOINT[?temperature=T&max_tokens=N&seed=S&device=cpu]     (tiny, a model folder, a train --out)
python:MODULE:FUNCTION       fn(observation, episode) -> action dict or None (MODULE may be a .py file)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._exceptions import PolicyError
from ._base import Policy

KINDS = ("null", "random", "oracle", "openai:", "anthropic:", "local:", "python:")
_NUMBERS = {
    "temperature": float,
    "max_tokens": int,
    "seed": int,
    "timeout_s": float,
    "max_batch": int,
    "max_chars": int,
}
_FLAGS = ("logprobs", "token_ids", "tools")


def _options(query: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        try:
            if key in _NUMBERS:
                out[key] = _NUMBERS[key](value)
            elif key in _FLAGS:
                out[key] = value.lower() in ("1", "true", "yes", "")
            else:
                out[key] = value
        except ValueError:
            raise PolicyError(f"policy option {key}={value!r} is not a {_NUMBERS[key].__name__}") from None
    return out


def _function(target: str) -> Callable[..., Any]:
    module_name, _, attr = target.rpartition(":")
    if not module_name or not attr:
        raise PolicyError(f"python:{target} is not python:MODULE:FUNCTION")
    try:
        if module_name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if spec is None or spec.loader is None or not Path(module_name).is_file():
                raise PolicyError(f"no Python file {module_name}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicyError(f"cannot import {module_name}: {exc}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise PolicyError(f"{module_name} has no function {attr!r}")
    return fn  # type: ignore[no-any-return]


def policy_from_spec(spec: str) -> Policy:
    """The policy a spec names (see the module docstring); ``PolicyError`` otherwise."""
    from ._baselines import CallablePolicy, NullPolicy, RandomPolicy
    from ._oracle import OraclePolicy

    head, _, query = spec.partition("?")
    kind, _, rest = head.partition(":")
    options = _options(query)
    try:
        if head == "null":
            return NullPolicy()
        if head == "random":
            return RandomPolicy(**options)
        if head == "oracle":
            return OraclePolicy()
        if kind == "python" and rest:
            return CallablePolicy(_function(rest))
        if kind == "openai" and rest:
            from ._openai import OpenAIPolicy

            return OpenAIPolicy(rest, **options)
        if kind == "anthropic" and rest:
            from ._anthropic import AnthropicPolicy

            return AnthropicPolicy(rest, **options)
        if kind in ("local", "hf") and rest:
            from ._hf import LocalPolicy

            return LocalPolicy(rest, **options)
    except TypeError as exc:
        raise PolicyError(f"policy {spec!r}: {exc}") from None
    kinds = ", ".join(k + ("..." if k.endswith(":") else "") for k in KINDS)
    raise PolicyError(f"unknown policy {spec!r}: use one of {kinds}")
