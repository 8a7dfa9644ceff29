"""The server's event loop gets the CPU first: a loaded host delays ``/health`` least.

The event loop answers every request. What it does costs little, but it must run the
moment a request arrives, and on a loaded host it waits instead: behind the server's
own threads (sessions' dedicated threads, graders, the warm pool's filler, pipe pumps)
and, where the kernel schedules each session of processes as one group (``autogroup``,
``/proc/sys/kernel/sched_autogroup_enabled``), behind every other session's processes,
each group with the same weight however many threads the server runs. On the coding
chaos test (32 attacking sessions on 2 cores, host load 40-70 from other jobs) the loop
thread spent 2-4 s of 16 waiting runnable against 0.6-0.8 s running, and that wait was
most of every slow ``/health``.

``favour_loop_thread()``, called on the loop's thread before it serves:

* gives that thread nice ``LOOP_NICE`` (about 9x a default thread's weight) and, on
  Linux 6.12 and later, a short time slice (``LOOP_SLICE_NS``), with which it preempts
  a running thread when it wakes; the threads it starts later inherit neither
  (``SCHED_RESET_ON_FORK``);
* when the server leads its own session (started with ``setsid``, as a service or a
  test's child) and serves on its main thread, gives that session's autogroup nice
  ``LOOP_NICE`` too, so the server as a whole is not one equal group among every shell
  and job on the host. Sandboxed
  sessions run in their own cgroups (``openenv.sandbox``), outside any autogroup: they
  gain nothing from it. A server started from an interactive shell shares the shell's
  session and leaves its autogroup alone (the change would outlive the server).

Lowering a nice value needs ``CAP_SYS_NICE`` (root has it); what is not allowed here is
left as it was and named in the returned list. The server serves either way.
"""

from __future__ import annotations

import logging
import os
import platform
import struct
import sys
import threading

__all__ = ["LOOP_NICE", "LOOP_SLICE_NS", "favour_loop_thread"]

log = logging.getLogger("openenv.server")

#: The loop thread's nice value, and its session's autogroup's.
LOOP_NICE = -10
#: The loop thread's time slice (the kernel's default: 0.7 ms times 1 + log2(cores)).
LOOP_SLICE_NS = 300_000

#: sched_setattr's system call number by machine (the C library has no wrapper).
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
_RESET_ON_FORK = 0x01  # SCHED_FLAG_RESET_ON_FORK
_ATTR = struct.Struct("IIQiIQQQII")  # struct sched_attr, version 1 (56 bytes)


def favour_loop_thread(nice: int = LOOP_NICE, slice_ns: int = LOOP_SLICE_NS) -> list[str]:
    """Raise the calling thread's CPU priority, and its session's when it leads one (see
    the module's docstring); returns what was not done and why (empty: all of it)."""
    if not sys.platform.startswith("linux"):
        return ["not Linux"]
    missed: list[str] = []
    tid = threading.get_native_id()
    if _setattr(tid, nice, slice_ns):
        pass
    elif _setattr(tid, os.getpriority(os.PRIO_PROCESS, tid), slice_ns):
        missed.append(f"the loop thread's nice {nice} (not permitted)")
    elif _setattr(tid, nice, 0):
        missed.append(f"a {slice_ns // 1000} us time slice (not supported here)")
    else:
        missed.append(f"the loop thread's nice {nice} and time slice (sched_setattr refused)")
    if os.getsid(0) == os.getpid() and threading.current_thread() is threading.main_thread():
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
        except OSError as exc:
            missed.append(f"the autogroup's nice {nice} ({exc.strerror})")
    for what in missed:
        log.debug("the event loop's CPU priority: not set: %s", what)
    return missed


def _setattr(tid: int, nice: int, slice_ns: int) -> bool:
    """sched_setattr(tid): SCHED_OTHER, reset on fork, ``nice``, ``slice_ns`` (0: the
    default slice); False when the call is missing or refused."""
    number = _SCHED_SETATTR.get(platform.machine())
    if number is None:
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    attr = _ATTR.pack(_ATTR.size, 0, _RESET_ON_FORK, nice, 0, slice_ns, 0, 0, 0, 0)
    return int(libc.syscall(number, tid, ctypes.create_string_buffer(attr, _ATTR.size), 0)) == 0
