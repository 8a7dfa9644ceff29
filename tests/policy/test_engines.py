"""``openenv policy serve --engine vllm|sglang``: the argv each engine gets, the one-line
refusal when the engine is not installed, and the exec itself (into a stand-in module on
PYTHONPATH that prints the argv it got: neither engine installs without a GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.policy._engines import engine_argv

ROOT = Path(__file__).resolve().parents[2]


def test_vllm_argv() -> None:
    assert engine_argv("vllm", "runs/arith", host="127.0.0.1", port=8001, python="py") == [
        "py", "-m", "vllm.entrypoints.openai.api_server", "--model", "runs/arith",
        "--host", "127.0.0.1", "--port", "8001",
    ]  # fmt: skip


def test_sglang_argv_with_name_and_key() -> None:
    argv = engine_argv(
        "sglang", "/m/llama", host="0.0.0.0", port=30000, model_name="llama", api_key="k", python="py"
    )
    assert argv == [
        "py", "-m", "sglang.launch_server", "--model-path", "/m/llama", "--host", "0.0.0.0",
        "--port", "30000", "--served-model-name", "llama", "--api-key", "k",
    ]  # fmt: skip


def test_unknown_engine_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        engine_argv("tgi", "m", host="h", port=1)


def _serve(args: list[str], pythonpath: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    code = (
        "import sys; from openenv.policy._cli import main; rc = main(sys.argv[1:]); "
        "print('torch' in sys.modules); sys.exit(rc)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(("engine", "install"), [("vllm", "pip install vllm"), ("sglang", "sglang[all]")])
def test_missing_engine_is_one_line_and_exit_2(engine: str, install: str) -> None:
    proc = _serve(["serve", "tiny", "--engine", engine], str(ROOT))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith(f"openenv policy: --engine {engine} needs {engine}")
    assert install in lines[0]
    assert proc.stdout.strip() == "False"  # refused before torch was imported


def test_vllm_engine_execs_the_built_argv(tmp_path: Path) -> None:
    server = tmp_path / "vllm" / "entrypoints" / "openai"
    server.mkdir(parents=True)
    for d in (tmp_path / "vllm", tmp_path / "vllm" / "entrypoints", server):
        (d / "__init__.py").write_text("")
    (server / "api_server.py").write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    proc = _serve(
        ["serve", "ckpt", "--engine", "vllm", "--port", "8123", "--model-name", "m"],
        f"{tmp_path}{os.pathsep}{ROOT}",
    )
    assert proc.returncode == 0, proc.stderr
    # exec replaced the process: the CLI's own trailing print never ran
    assert json.loads(proc.stdout) == [
        "--model", "ckpt", "--host", "127.0.0.1", "--port", "8123", "--served-model-name", "m",
    ]  # fmt: skip
    assert "openenv: starting vllm:" in proc.stderr
