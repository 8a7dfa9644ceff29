"""Lazy exports for a package ``__init__``: names loaded from their module on first use.

    __getattr__, __dir__ = lazy_exports(__name__, {"EnvClient": ".client._sync"}, __all__)

``missing`` names what upstream OpenEnv has and this package does not: asking for one
raises an ``AttributeError`` that says so (rather than a ``None`` placeholder).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    names: Mapping[str, str],
    exported: Iterable[str] = (),
    missing: Mapping[str, str] | None = None,
    check: Callable[[str], None] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps each lazy name to the
    module (relative to ``package``) that defines it; a loaded name is cached in the
    package. ``missing`` maps a name to why it is not provided; ``check(name)`` runs
    before a name loads (to raise a clear error when an extra is not installed)."""
    listed = sorted(set(exported) | set(names))
    gone = dict(missing or {})

    def __getattr__(name: str) -> Any:
        if name in names:
            if check is not None:
                check(name)
            value = getattr(import_module(names[name], package), name)
            setattr(sys.modules[package], name, value)
            return value
        if name in gone:
            raise AttributeError(f"{package}.{name} is upstream OpenEnv's, not provided here: {gone[name]}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(listed))

    return __getattr__, __dir__
