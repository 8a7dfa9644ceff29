"""Optional parts: import a module that an extra provides, or say which extra to install.

    from openenv._extras import require
    uvicorn = require("uvicorn", extra="server", feature="openenv serve")

A missing extra raises ``MissingExtra`` (an ``ImportError``) whose message is one line
naming the extra; the CLI prints it without a traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ._exceptions import MissingExtra as MissingExtra  # re-exported: its home before the one tree


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module``; raise ``MissingExtra`` naming ``extra`` when it is absent."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] not in (top, module):
            raise  # a different module is missing: a real bug, keep the traceback
        raise MissingExtra(feature, extra, exc.name or module) from None
