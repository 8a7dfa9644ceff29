"""``harness_endpoint``: ``/harness`` on ``openenv serve`` for an env with a harness config.

The ``openenv.endpoints`` entry point (pyproject.toml). An env has a harness config when
it is a ``HarnessEnvironment`` subclass (each connection gets ``EnvClass(**env_kwargs)``,
as upstream's server does) or has a ``harness_env(options, env_kwargs)`` callable,
``options`` the ``/harness`` URL's query parameters (the terminal env's:
``?agent=claude-code&task_id=count-errors``). Any other env gets no route, and this
module costs its server nothing: the harness package loads only for an env that has one.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

__all__ = ["harness_endpoint"]


def harness_endpoint(env_class: Any, manager: Any, settings: Any) -> Any:
    """The ``/harness`` endpoint (``openenv.harness._route.HarnessEndpoint``) for ``env_class``,
    or None when it has no harness config."""
    loaded = sys.modules.get("openenv.harness._harness_env")  # a subclass has loaded it
    subclass = (
        loaded is not None and inspect.isclass(env_class) and issubclass(env_class, loaded.HarnessEnvironment)
    )
    config = getattr(env_class, "harness_env", None)
    if not subclass and not callable(config):
        return None
    from . import _served
    from ._route import HarnessEndpoint

    kwargs = dict(getattr(settings, "env_kwargs", None) or {})
    limit = max(1, int(getattr(settings, "max_sessions", 8)))
    if subclass or config is None:
        return HarnessEndpoint(lambda options: env_class(**kwargs), max_sessions=limit)
    make = config
    return HarnessEndpoint(
        lambda options: make(options, dict(kwargs)), max_sessions=limit, on_close=_served.close
    )
