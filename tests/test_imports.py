"""Importing the client side stays light: no server, web, MCP, Docker or torch modules.

Each check runs in a fresh interpreter so nothing imported by the test session counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HEAVY = [
    "openenv.server",
    "openenv.containers",
    "starlette",
    "uvicorn",
    "fastapi",
    "websockets.asyncio",
    "httpx",
    "torch",
    "docker",
    "mcp",
    "numpy",
]


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize(
    "code",
    [
        "import openenv",
        "from openenv import EnvClient, AsyncEnvClient, Environment, AsyncEnvironment",
        "import openenv.client",
        "import echo_env",
        "from echo_env import MODELS, EchoAction\n"
        "from openenv import EnvClient, AsyncEnvClient\n"
        "EnvClient('http://127.0.0.1:1', MODELS)\n"
        "AsyncEnvClient('http://127.0.0.1:1', MODELS)",
    ],
)
def test_client_side_imports_stay_light(code):
    modules = loaded_after(code)
    assert "openenv" in modules
    assert heavy_in(modules) == []


def test_the_probe_does_see_heavy_imports():
    # guards the test above against passing vacuously
    assert "openenv.server" in heavy_in(loaded_after("from openenv.server import create_app, serve"))
    assert "starlette" in heavy_in(loaded_after("from openenv.server import create_app, serve"))


def test_importing_the_server_does_not_import_fastapi_or_mcp():
    modules = loaded_after("from openenv.server import create_app, serve")
    assert not [m for m in modules if m == "fastapi" or m.startswith(("fastapi.", "mcp"))]
