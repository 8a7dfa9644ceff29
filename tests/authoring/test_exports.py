"""``openenv.authoring`` and ``openenv.hub``: sorted ``__all__`` matching what they export,
and nothing heavy loaded by the CLI's parser."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from tests.test_exported_members import isort_key, public_names


@pytest.mark.parametrize("name", ["openenv.authoring", "openenv.hub"])
def test_all_is_sorted_and_complete(name):
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__, key=isort_key)
    assert set(module.__all__) == public_names(module)


def test_cli_parser_loads_no_optional_dependency():
    code = (
        "import sys, json\nfrom openenv.cli import build_parser\nbuild_parser()\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = json.loads(out.stdout)
    heavy = ("huggingface_hub", "jsonschema", "yaml", "starlette", "playwright", "websockets")
    assert [m for m in loaded if m.split(".")[0] in heavy] == []
