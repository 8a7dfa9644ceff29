"""A stop signal ends ``openenv serve`` within the graceful period plus ``EXIT_MARGIN_S``
whatever its threads do (openenv/server/_exit.py): status 1 when the app's shutdown
itself did not finish, 0 when only stray threads were left.

The servers here run with a graceful period of 0.5 s (patched in their process) so
that the test does not wait uvicorn's 5 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests._children import python_child

ROOT = Path(__file__).resolve().parents[2]

SERVER = """
import contextlib, sys, time
import openenv.server._exit as ex, openenv.server._serve as sv
ex.GRACE_S = sv.GRACE_S = 0.5
from openenv.server import serve
from openenv.server._settings import ServerSettings
from tests._envs import make_env

base = make_env()
STUCK = sys.argv[1]

class Stuck(base):
    @classmethod
    def process_resources(cls, **kwargs):
        @contextlib.contextmanager
        def resources():
            if STUCK == "thread":  # a non-daemon thread still busy at the interpreter's exit
                import threading
                threading.Thread(target=time.sleep, args=(60,)).start()
            yield None
            if STUCK == "shutdown":  # the app's shutdown never finishes
                time.sleep(60)
        return resources()

serve(Stuck, ServerSettings(host="127.0.0.1", port=0), exits_after=True)
print("returned", flush=True)
"""


def _serve_and_stop(stuck: str) -> tuple[int, float, str]:
    proc = python_child("-c", SERVER, stuck, cwd=ROOT, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the serving line, once started
        assert "serving" in line, (line, proc.stderr.read() if proc.stderr else "")
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - start
        return code, took, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.mark.parametrize(("stuck", "status"), [("shutdown", 1), ("thread", 0)])
def test_a_stop_signal_ends_the_process_by_the_deadline(stuck: str, status: int) -> None:
    code, took, err = _serve_and_stop(stuck)
    assert code == status, err[-2000:]
    # 0.5 s of grace + 0.6 s of margin; the rest is room for a loaded machine (a hang
    # bound: over 10x the 1.1 s, far under the 60 s the stuck part would take)
    assert took < 20.0, took
    assert ("did not finish" if status else "exiting without them") in err
