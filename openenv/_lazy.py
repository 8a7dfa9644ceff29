"""Lazy exports for a package ``__init__``: names loaded from their module on first use.

    __getattr__, __dir__ = lazy_exports(__name__, {"EnvClient": ".client._sync"}, __all__)

``missing`` names what upstream OpenEnv has and this package does not: asking for one
raises an ``AttributeError`` that says so (rather than a ``None`` placeholder).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = ["export_list", "lazy_exports"]


def lazy_exports(
    package: str,
    names: Mapping[str, str],
    exported: Iterable[str] = (),
    missing: Mapping[str, str] | None = None,
    check: Callable[[str], None] | None = None,
    also: str | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps each lazy name to the
    module (relative to ``package``) that defines it; a loaded name is cached in the
    package. ``missing`` maps a name to why it is not provided; ``check(name)`` runs
    before a name loads (to raise a clear error when an extra is not installed).
    ``also``: a module whose ``__all__`` the package exports too, imported when one of
    its names, or the package's ``__all__`` (then ``names`` and its names, in
    ``export_list``'s order: leave ``__all__`` undefined in the package), is asked for."""
    listed = sorted(set(exported) | set(names))
    gone = dict(missing or {})

    def __getattr__(name: str) -> Any:
        more = import_module(also, package) if also and name not in names and name not in gone else None
        if name in names or (more is not None and name in more.__all__):
            if check is not None:
                check(name)
            value = getattr(more or import_module(names[name], package), name)
        elif more is not None and name == "__all__":
            value = _ruff_order({*listed, *more.__all__})
        elif name in gone:
            raise AttributeError(f"{package}.{name} is upstream OpenEnv's, not provided here: {gone[name]}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        more = import_module(also, package).__all__ if also else []
        return sorted(set(vars(sys.modules[package])) | set(listed) | set(more))

    return __getattr__, __dir__



def export_list(*modules: ModuleType) -> list[str]:
    """A package's ``__all__`` made of its ``modules``' ``__all__`` (each module keeps the
    one list of its names): each name once, in ruff's RUF022 order (SCREAMING_CASE, then
    CamelCase, then the rest)."""
    return _ruff_order({name for module in modules for name in module.__all__})


def _ruff_order(names: Iterable[str]) -> list[str]:
    return sorted(names, key=lambda n: (not n.isupper(), not n[:1].isupper(), n))
