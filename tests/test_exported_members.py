"""Each public module's ``__all__`` is sorted and matches what it really exports."""

from __future__ import annotations

import importlib
import re
import types

import pytest

MODULES = [
    "openenv", "openenv.client", "openenv.server", "echo_env", "openenv.tasks", "openenv.rewards",
    "openenv.gym", "openenv.sandbox", "openenv.mcp", "openenv.authoring", "openenv.hub", "openenv.train",
    "openenv.containers", "openenv.k8s", "openenv.core", "openenv.core.env_server", "openenv.auto",
    "openenv.eval", "openenv.policy", "openenv.catalog", "openenv.discovery", "openenv.verifiers",
    "openenv.agentrl", "openenv.harbor", "openenv.validation", "openenv.capture", "openenv.resolve",
    "openenv.core.harness", "coding_env", "browser_env",
]


def isort_key(name: str) -> tuple[int, list[object]]:
    """Ruff RUF022's order: SCREAMING_CASE, then CamelCase, then the rest; natural sort."""
    if name.isupper():
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    parts = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
    return kind, parts


def public_names(module: types.ModuleType) -> set[str]:
    names = {
        name for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    lazy = getattr(module, "__getattr__", None)  # PEP 562: names loaded on first use
    if lazy is not None:
        for name in module.__all__:
            if name not in names:
                try:
                    lazy(name)
                except AttributeError:
                    continue
                names.add(name)
    return names


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted(name):
    exported = importlib.import_module(name).__all__
    assert exported == sorted(exported, key=isort_key)


@pytest.mark.parametrize("name", MODULES)
def test_all_has_no_duplicates(name):
    exported = importlib.import_module(name).__all__
    assert len(exported) == len(set(exported))


@pytest.mark.parametrize("name", MODULES)
def test_all_matches_public_names(name):
    module = importlib.import_module(name)
    exported = set(module.__all__) - {"__version__"}
    assert exported == public_names(module)


@pytest.mark.parametrize("name", MODULES)
def test_every_exported_name_resolves(name):
    module = importlib.import_module(name)
    for attr in module.__all__:
        assert getattr(module, attr) is not None


def test_version_is_exported():
    import openenv

    assert "__version__" in openenv.__all__
    assert openenv.__version__ == "0.1.0"


def test_star_import_gives_exactly_all():
    namespace: dict[str, object] = {}
    exec("from openenv import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(importlib.import_module("openenv").__all__)
