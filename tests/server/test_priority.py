"""The server's event loop thread gets the CPU first (openenv/server/_priority.py).

A child process that leads its own session, as ``openenv serve`` does under a service
manager or a test, calls ``favour_loop_thread()`` on its main thread and reports what
the kernel holds: the thread's nice value and time slice, a thread started after it
(which must not inherit either), and its session's autogroup. Read back from ``/proc``,
not from the function's own answer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openenv.server._priority import LOOP_NICE, LOOP_SLICE_NS

PROBE = r"""
import json, os, threading
from openenv.server._priority import favour_loop_thread

def slice_ns(tid):
    for line in open(f"/proc/self/task/{tid}/sched"):
        if line.startswith("se.slice"):
            return int(float(line.split(":")[1]))
    return None

def autogroup():
    try:
        return open("/proc/self/autogroup").read().split()[-1]
    except OSError:
        return None

missed = favour_loop_thread()
me = threading.get_native_id()
out = {"missed": missed, "nice": os.getpriority(os.PRIO_PROCESS, me), "slice": slice_ns(me),
       "autogroup": autogroup()}
def child():
    tid = threading.get_native_id()
    out["child_nice"], out["child_slice"] = os.getpriority(os.PRIO_PROCESS, tid), slice_ns(tid)
t = threading.Thread(target=child)
t.start()
t.join()
print(json.dumps(out))
"""


def _probe() -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60,
                         start_new_session=True, check=True).stdout
    return dict(json.loads(out))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="scheduler priorities are set on Linux only")
def test_loop_thread_favoured_and_children_not() -> None:
    got = _probe()
    if os.geteuid() != 0:  # no CAP_SYS_NICE: the nice values are refused, and said so
        assert got["nice"] == 0
        assert any("nice" in m for m in got["missed"])
        return
    assert got["nice"] == LOOP_NICE, got
    assert got["child_nice"] == 0, got  # the sessions' threads keep the default weight
    if got["slice"] is not None and not any("slice" in m for m in got["missed"]):
        assert got["slice"] == LOOP_SLICE_NS, got
        assert got["child_slice"] != LOOP_SLICE_NS, got
    if Path("/proc/sys/kernel/sched_autogroup_enabled").exists() and got["autogroup"] is not None:
        assert got["autogroup"] == str(LOOP_NICE), got
    assert got["missed"] == [] or all("slice" in m for m in got["missed"]), got
