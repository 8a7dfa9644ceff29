"""``openenv.mcp``'s ``__all__`` is sorted and complete, and its models need no SDK."""

from __future__ import annotations

import subprocess
import sys

import openenv.mcp

from ..test_exported_members import isort_key, public_names


def test_all_is_sorted_and_matches_public_names():
    exported = openenv.mcp.__all__
    assert exported == sorted(exported, key=isort_key)
    assert set(exported) == public_names(openenv.mcp)


def test_models_import_without_the_sdk():
    code = (
        "import sys\n"
        "from openenv.mcp import MCP_MODELS, ToolCall\n"
        "assert not [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))]\n"
        "print(ToolCall(tool='x').model_dump())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "'tool': 'x'" in out.stdout


def test_missing_sdk_names_the_extra():
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None  # as if the extra were not installed\n"
        "import openenv.mcp\n"
        "try:\n"
        "    openenv.mcp.McpServerEnv\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "needs the 'mcp' extra" in out.stdout
    assert "pip install 'openenv[mcp]'" in out.stdout
