"""``openenv.tasks``, ``openenv.rewards`` and ``openenv.gym``: a sorted ``__all__`` that
names exactly the public names; the packages stay out of ``import openenv``."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest


@pytest.mark.parametrize("name", ["openenv.tasks", "openenv.rewards", "openenv.gym"])
def test_all_is_sorted_and_complete(name):
    module = importlib.import_module(name)
    public = {
        k
        for k, v in vars(module).items()
        if not k.startswith("_") and not isinstance(v, types.ModuleType) and k != "annotations"
    }
    assert sorted(module.__all__, key=lambda n: (not n[:1].isupper(), n)) == list(module.__all__)
    assert set(module.__all__) == public


def test_heavy_parts_load_only_when_used():
    code = (
        "import sys, openenv, openenv.tasks, openenv.rewards; "
        "print(sorted(m for m in ('datasets', 'gymnasium', 'numpy', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
