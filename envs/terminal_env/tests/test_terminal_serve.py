"""``openenv serve terminal --sandbox strict`` refuses to start without bubblewrap."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from openenv.cli import build_parser
from openenv.containers._local import free_port


def test_strict_refuses_to_start_without_bubblewrap() -> None:
    env = {**os.environ, "PATH": "/nonexistent"}  # no bwrap to be found
    port = str(free_port())
    cmd = [sys.executable, "-m", "openenv", "serve", "terminal", "--sandbox", "strict", "--port", port]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the server started (or hung) although strict containment is impossible")
    assert done.returncode != 0
    assert "sandbox level 'strict' needs bubblewrap" in done.stderr


def test_the_flag_is_parsed() -> None:
    args = build_parser().parse_args(["serve", "terminal", "--sandbox", "none"])
    assert args.sandbox == "none"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "terminal", "--sandbox", "loose"])
