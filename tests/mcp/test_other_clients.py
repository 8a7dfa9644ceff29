"""Clients from other venvs against our ``/mcp`` and ``openenv mcp``: the mcp 1.x SDK
(``initialize``; ``.venv-mcp1`` from ``scripts/setup.d/40-mcp.sh``) and upstream
OpenEnv 0.10's ``MCPToolClient`` (``.venv-upstream`` from ``scripts/test.sh``).

Each runs a script from ``clients/`` in its own interpreter, which prints one JSON
line. A missing venv skips, saying which and how to make it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from echo_env import EchoEnv

REPO = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).resolve().parent / "clients"
SDK1_PY = REPO / ".venv-mcp1" / "bin" / "python"
UPSTREAM_PY = Path(os.environ.get("OPENENV_UPSTREAM_PYTHON") or REPO / ".venv-upstream" / "bin" / "python")
EXIT_NO_UPSTREAM = 5


def run_script(python: Path, script: str, *args: str, timeout_s: float = 120) -> dict[str, Any]:
    if not python.is_file():
        pytest.skip(f"{python} is missing (scripts/setup.sh creates it)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [str(python), str(CLIENTS / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=tempfile.gettempdir(),
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if proc.returncode == EXIT_NO_UPSTREAM and "cannot import upstream" in proc.stderr:
        pytest.skip(f"{python} cannot import upstream openenv.core: {proc.stderr.strip()[-300:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0, f"{script} rc={proc.returncode}\n{proc.stderr[-3000:]}"
    assert lines, f"{script} printed no JSON line\n{proc.stderr[-3000:]}"
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def check_sdk1(out: dict[str, Any]) -> None:
    assert out["protocol"] == "2025-11-25"
    assert out["server"] == "echo_env"
    assert [t["name"] for t in out["tools"]] == ["echo"]
    assert "session_id" not in out["tools"][0]["schema"]["properties"]
    assert [c["structured"]["echoed_message"] for c in out["calls"]] == ["a", "bb"]
    assert [c["is_error"] for c in out["calls"]] == [False, False]
    assert out["calls"][1]["structured"]["truncated"] is True  # one episode, max_steps=2
    assert out["bad_is_error"] is True


def test_sdk1_client_over_streamable_http_and_stdio(serve):
    server = serve(EchoEnv)
    url = f"{server.url}/mcp?max_steps=2"
    target = str(REPO / "envs" / "echo_env")
    out = run_script(SDK1_PY, "sdk1_client.py", url, sys.executable, target, '{"max_steps": 2}', "a", "bb")
    check_sdk1(out["http"])
    check_sdk1(out["stdio"])
    server.wait_active(0)  # the client's DELETE closed its env session


def test_upstream_mcp_tool_client(serve):
    server = serve(EchoEnv)
    out = run_script(UPSTREAM_PY, "upstream_tool_client.py", server.url, "a", "bb", timeout_s=150)
    assert len(out["session_id"]) == 32
    assert [t["name"] for t in out["tools"]] == ["echo"]
    assert out["tools"][0]["schema"]["required"] == ["message"]
    assert out["has_tool"] is True
    assert [c["echoed_message"] for c in out["calls"]] == ["a", "bb"]
    assert out["unknown_tool"].startswith("Tool 'no_such_tool' failed: Unknown tool")
    server.wait_active(0)  # openenv/session/close and the WebSocket's close freed both sessions
