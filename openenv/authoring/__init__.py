"""Authoring tools: scaffold an env (``init_env``), check one deeply (``validate``).

Names load on first use, so ``openenv --help`` stays quick.
"""

from __future__ import annotations

import typing

from .._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from .._exceptions import ManifestError
    from .._manifest import Manifest, load_manifest
    from ._init import init_env
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
    "init_env": "._init",
    "Manifest": ".._manifest",
    "ManifestError": ".._exceptions",
    "load_manifest": ".._manifest",
    "Check": "._report",
    "Outcome": "._report",
    "Report": "._report",
    "validate": "._validate",
    "validate_path": "._validate",
    "validate_url": "._validate",
}


__getattr__, __dir__ = _lazy_exports(__name__, _WHERE, __all__)
