"""Who made a session container, and whether that process is gone for certain.

Every container (and session network) a server makes carries two labels:
``openenv.terminal.owner`` (``host:pid:token``: the server's ``TaskImages``) and
``openenv.terminal.owner-proc`` (``boot:pidns:start``: this boot of the machine, the
server's PID namespace and its process's start time in clock ticks since boot). A server
starting on the same engine removes the leftovers of owners that are gone, and only
those. Gone means, for an owner on this host:

- a different boot id: the machine restarted since, so no process of then runs;
- else, in our PID namespace, no process with its pid, or one that started at another
  time (the pid was reused after the owner died).

An owner on another host, or in another PID namespace of this one (a server in a
container that shares the engine), is never judged: its pids mean nothing here. Labels
without ``owner-proc`` (made by an older server) are judged by the pid alone.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping

from openenv.containers._docker_admin import pid_alive

OWNER_LABEL = "openenv.terminal.owner"
PROC_LABEL = "openenv.terminal.owner-proc"


@functools.cache
def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


@functools.cache
def pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        return ""


def start_ticks(pid: int) -> str:
    """The process's start time (``/proc/PID/stat`` field 22); "" where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return ""
    fields = stat[stat.rfind(b")") + 2 :].split()  # after "pid (comm) "
    return fields[19].decode() if len(fields) > 19 else ""


def owner_labels(token: str) -> dict[str, str]:
    """The two labels for containers this process makes (``token`` tells apart the
    ``TaskImages`` of one process)."""
    pid = os.getpid()
    return {
        OWNER_LABEL: f"{socket.gethostname()}:{pid}:{token}",
        PROC_LABEL: f"{boot_id()}:{pid_namespace()}:{start_ticks(pid)}",
    }


def owner_gone(labels: Mapping[str, str]) -> bool:
    """Whether the process that made the container with these labels is gone for certain
    (see the module); False whenever it cannot be told."""
    host, _, rest = str(labels.get(OWNER_LABEL, "")).partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    boot, _, tail = str(labels.get(PROC_LABEL, "")).partition(":")
    pidns, _, start = tail.partition(":")
    if boot and boot_id() and boot != boot_id():
        return True
    if pidns and pidns != pid_namespace():
        return False
    return process_gone(pid, start)


def process_gone(pid: int, start: str) -> bool:
    """No process ``pid`` in this PID namespace, or one that started at another time than
    ``start`` (clock ticks; "": not compared)."""
    if not pid_alive(pid):
        return True
    return bool(start) and start_ticks(pid) not in ("", start)
