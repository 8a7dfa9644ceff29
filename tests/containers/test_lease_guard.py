"""The lease a Monarch replica serves under (``openenv.containers._lease_guard``), run on
its own as the host actor starts a replica: ``python -m openenv serve`` with
``OPENENV_LEASE`` set. It serves, and its whole process group ends once the lease file
is gone. Needs no Monarch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from openenv.containers import wait_healthy
from openenv.containers._lease_guard import LEASE_ENV, lease_age
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
    argv = [sys.executable, "-m", "openenv", "serve", str(ROOT / "envs" / "echo_env")]
    argv += ["--host", "127.0.0.1", "--port", str(port)]
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, LEASE_ENV: f"{lease}:600"},
        start_new_session=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", timeout_s=60, alive=lambda: proc.poll() is None)
        assert proc.poll() is None  # a fresh lease (600 s) keeps it serving
        lease.unlink()
        proc.wait(timeout=30)  # the lease's next look (0.25 s) sends the group SIGTERM
        deadline = time.monotonic() + 10
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_alive(proc.pid)
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()
