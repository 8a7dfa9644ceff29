"""With a token but no network, `openenv push` and `pull` print one line and exit 1
(docs/hub.md), whatever the HTTP library of huggingface_hub raises."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub", reason="needs the 'hub' extra")

ROOT = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    with socket.socket() as s:  # bound and closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["push", "envs/echo_env", "--repo-id", "alice/echo"],
         "openenv push: authentication (whoami) failed"),
        (["pull", "alice/echo", "--dir", "{tmp}/echo"], "openenv pull: downloading alice/echo failed"),
    ],
)
def test_no_network_is_one_line_and_exit_1(argv: list[str], what: str, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_not_a_real_token", "HF_HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", *(a.format(tmp=tmp_path) for a in argv)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"{what}: cannot reach the Hub at {endpoint} (")
    assert "Traceback" not in proc.stderr

