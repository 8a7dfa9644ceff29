"""The env's constructor arguments (``--env-kwargs``), checked once when the server starts.

Every session builds its env as ``cls(**env_kwargs)`` (and ``process_resources`` gets
the same), so an argument the env does not take, or a value it refuses, would fail
every reset with a traceback in the server's log. ``check_env_kwargs`` finds it before
the server listens:

* against the ``__init__`` signature: names it does not take, required ones missing;
* against ``env_kwargs_model`` when the env declares one (a pydantic model of its
  constructor arguments, for an ``__init__(self, **kwargs)``): names and values.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

from .._exceptions import EnvKwargsError

#: Passed by the server itself, never by ``--env-kwargs``.
_SERVER_ARGS = frozenset({"resources"})


def _close(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def _takes(known: list[str]) -> str:
    return f"it takes {', '.join(known)}" if known else "it takes no arguments"


def _signature(env_class: type) -> inspect.Signature | None:
    try:
        return inspect.signature(env_class)
    except (TypeError, ValueError):  # a builtin or C-level __init__: nothing to check against
        return None


def _check_model(env_class: type, model: Any, kwargs: dict[str, Any]) -> None:
    from pydantic import ValidationError

    fields = sorted(getattr(model, "model_fields", {}))
    unknown = sorted(set(kwargs) - set(fields))
    if unknown:
        name = unknown[0]
        raise EnvKwargsError(
            f"--env-kwargs: {env_class.__name__} takes no argument {name!r}{_close(name, fields)}; "
            f"{_takes(fields)}"
        )
    try:
        model.model_validate(kwargs)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "value"
        raise EnvKwargsError(f"--env-kwargs: {env_class.__name__} {where}: {first.get('msg')}") from None


def check_env_kwargs(env_class: type, kwargs: dict[str, Any]) -> None:
    """Raise ``EnvKwargsError`` (one line, naming the argument and the close valid ones)
    when ``kwargs`` cannot build ``env_class``; the env's own value checks beyond its
    signature and ``env_kwargs_model`` run when a session starts."""
    model = getattr(env_class, "env_kwargs_model", None)
    signature = _signature(env_class)
    if signature is not None:
        params = {n: p for n, p in signature.parameters.items() if n not in _SERVER_ARGS}
        var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
        named = [
            n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        if not var_kw:
            for name in kwargs:
                if name not in named:
                    raise EnvKwargsError(
                        f"--env-kwargs: {env_class.__name__} takes no argument {name!r}"
                        f"{_close(name, named)}; {_takes(named)}"
                    )
        missing = [
            n for n in named
            if params[n].default is inspect.Parameter.empty and n not in kwargs
        ]
        if missing:
            raise EnvKwargsError(
                f"--env-kwargs: {env_class.__name__} needs {', '.join(repr(n) for n in missing)}"
            )
        kwargs = {k: v for k, v in kwargs.items() if k not in named}  # the rest go to **kwargs
    if model is not None and hasattr(model, "model_validate"):
        _check_model(env_class, model, {k: v for k, v in kwargs.items() if k not in _SERVER_ARGS})
