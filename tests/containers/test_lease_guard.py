"""The lease guard a Monarch replica runs under (``python -m openenv.containers._lease_guard``),
run on its own: it serves, and its whole process group ends once its lease file is gone.
Needs no Monarch: the guard is a module of the standard library and ``openenv serve``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from openenv.containers import wait_healthy
from openenv.containers._lease_guard import lease_age
from openenv.containers._local import free_port

ROOT = Path(__file__).resolve().parents[2]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_lease_age_is_infinite_for_a_missing_file(tmp_path: Path) -> None:
    lease = tmp_path / "lease"
    assert lease_age(str(lease)) == float("inf")
    lease.touch()
    assert 0 <= lease_age(str(lease)) < 60


def test_a_replica_serves_until_its_lease_is_removed_then_its_group_ends(tmp_path: Path) -> None:
    lease = tmp_path / "0.lease"
    lease.touch()
    port = free_port("127.0.0.1")
    argv = [sys.executable, "-m", "openenv.containers._lease_guard", str(lease), "600", "serve"]
    argv += [str(ROOT / "envs" / "echo_env"), "--host", "127.0.0.1", "--port", str(port)]
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", timeout_s=60, alive=lambda: proc.poll() is None)
        assert proc.poll() is None  # a fresh lease (600 s) keeps it serving
        lease.unlink()
        proc.wait(timeout=30)  # the guard's next look (0.25 s) sends the group SIGTERM
        deadline = time.monotonic() + 10
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_alive(proc.pid)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()
