"""Authoring tools: scaffold an env (``init_env``), check one deeply (``validate``).

Names load on first use, so ``openenv --help`` stays quick.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from .._exceptions import ManifestError
    from ._init import init_env
    from ._manifest import Manifest, load_manifest
    from ._report import Check, Outcome, Report
    from ._validate import validate, validate_path, validate_url

__all__ = [
    "Check",
    "Manifest",
    "ManifestError",
    "Outcome",
    "Report",
    "init_env",
    "load_manifest",
    "validate",
    "validate_path",
    "validate_url",
]

_WHERE = {
    "init_env": "_init",
    "Manifest": "_manifest",
    "ManifestError": "_manifest",  # defined in openenv._exceptions
    "load_manifest": "_manifest",
    "Check": "_report",
    "Outcome": "_report",
    "Report": "_report",
    "validate": "_validate",
    "validate_path": "_validate",
    "validate_url": "_validate",
}


def __getattr__(name: str) -> typing.Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
