"""Nothing the coding server does itself holds the GIL for long (issue 27: with 32
attacking sessions, every session's event loop waited on it).

- It never forks itself: ``os.fork`` holds the GIL while the kernel copies the server's
  page tables (milliseconds for a few hundred MiB), and under load the forking thread
  is preempted with the GIL held. Killing a closed sandbox's processes forked the
  server; with sessions churning sandboxes that was most of the time the GIL was held.
- What the process made to start is frozen out of the cyclic collector's sight: a full
  collection scanned those ~140,000 objects, ~70 ms holding the GIL."""

from __future__ import annotations

import gc
import os
import subprocess

import pytest
from _coding_fixtures import FAST, runtime
from coding_env.env import CodingEnv

from openenv.sandbox import _procs
from openenv.sandbox._procs import pids_of_uid

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids (and killing by uid) need root")


def _no_fork() -> int:
    raise AssertionError("the server forked itself")


@as_root
def test_closing_a_worker_kills_its_processes_without_forking_the_server(monkeypatch):
    with runtime("auto", pool_size=0) as rt:
        worker = rt.new_worker()
        cell = "import subprocess\nsubprocess.Popen(['sleep', '60'], start_new_session=True).pid"
        assert worker.run(cell, timeout_s=5, grace_s=1).exception is None
        uid = worker.sandbox.uid
        ours = set(pids_of_uid(uid))
        assert len(ours) >= 2  # the worker and its sleep (outside its group)
        monkeypatch.setattr(os, "fork", _no_fork)
        worker.close()
        # only these: the uid, given back, may be leased at once by another server on the host
        assert set(pids_of_uid(uid)) & ours == set()


@as_root
def test_the_kill_script_refuses_to_run_as_root():
    """``kill -1`` as root would reach every process of the host: the script checks
    that ``setpriv`` really switched to the uid it names (here run as root, with the
    kill replaced by an echo, it does nothing)."""
    dry = _procs._KILL_AS_UID.replace("kill -KILL -1", "echo KILL")
    assert "kill" not in dry
    uid = "189999"  # no sandbox's: below the sandbox uids
    script = ["/bin/sh", "-c", dry, "openenv-kill", uid]
    as_root = subprocess.run(script, capture_output=True, text=True, check=False)
    assert as_root.stdout == ""
    switch = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    as_uid = subprocess.run([*switch, *script], capture_output=True, text=True, check=False)
    assert as_uid.stdout == "KILL\n"


def test_the_objects_made_at_start_are_out_of_the_collectors_sight():
    gc.unfreeze()
    try:
        with CodingEnv.process_resources(**{**FAST, "pool_size": 0}):
            assert gc.get_freeze_count() > 10_000  # the modules, the app, the task set
            assert len(gc.get_objects()) < gc.get_freeze_count()
    finally:
        gc.unfreeze()
