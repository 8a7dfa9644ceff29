"""Upstream OpenEnv's top-level names: ``from openenv import GenericEnvClient`` (as
verifiers' OpenEnv task set does), ``AutoEnv``, ``AutoAction``, ``GenericAction`` and
``SyncEnvClient`` are this package's classes, loaded on first use only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import openenv

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ("AutoAction", "AutoEnv", "GenericAction", "GenericEnvClient", "SyncEnvClient")


@pytest.mark.parametrize("name", UPSTREAM)
def test_each_upstream_name_is_ours(name):
    import openenv.auto
    import openenv.core

    home = openenv.auto if name.startswith("Auto") else openenv.core
    assert getattr(openenv, name) is getattr(home, name)
    assert name in openenv.__all__
    assert name in dir(openenv)


def test_the_verifiers_taskset_imports_resolve():
    # what verifiers.v1.tasksets.openenv imports from us
    from openenv import GenericEnvClient
    from openenv.core import CallToolAction

    assert issubclass(GenericEnvClient, openenv.core.EnvClient)
    assert CallToolAction(tool_name="echo", arguments={}).tool_name == "echo"


def test_import_openenv_does_not_load_auto_or_core():
    probe = "import openenv, sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert [m for m in loaded if m.startswith(("openenv.auto", "openenv.core"))] == []
