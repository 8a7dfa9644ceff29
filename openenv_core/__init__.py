"""``openenv_core``: the old name of ``openenv.core``, kept so old imports keep working.

``import openenv_core`` warns (``DeprecationWarning``); every ``openenv_core.X`` is the
very module ``openenv.core.X`` (``openenv_core.env_server.types.State is
openenv.core.env_server.types.State``), and ``openenv_core.NAME`` is ``openenv.core.NAME``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import openenv.core as _core

_OLD, _NEW = "openenv_core", "openenv.core"

warnings.warn(
    "openenv_core is deprecated: import openenv.core instead", DeprecationWarning, stacklevel=2
)


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``openenv_core.X`` as the module ``openenv.core.X``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_OLD + "."):
            return None
        real = _NEW + fullname[len(_OLD) :]
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            return None
        if found is None:
            return None
        package = found.submodule_search_locations is not None
        return importlib.util.spec_from_loader(fullname, self, is_package=package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(_NEW + spec.name[len(_OLD) :])

    def exec_module(self, module: ModuleType) -> None:
        return None  # the real module is already executed


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())

def __getattr__(name: str) -> Any:
    return getattr(_core, name)


def __dir__() -> list[str]:
    return dir(_core)
