"""Poll a server's ``/health`` from a process of its own (run as a script by the chaos
tests): ``python _health_poller.py URL INTERVAL_S [SERVER_PID]``. It prints ``ready``
after its first poll, polls on one keep-alive connection until its stdin closes, then
prints ``{"polls": [...], "waits": [...]}``: the seconds of each poll (``null`` for a
failed one) and, with ``SERVER_PID``, how long of it the server's event loop (its main
thread) waited runnable for a CPU (``/proc/PID/task/PID/schedstat``): on a host loaded
by others that wait is the host's, not the server's.

Its own process, at the priority the server gives its event loop's thread
(``favour_loop_thread``; started in a session of its own, so that its autogroup gets
it too): what it measures is the server's answer, not the test process's interpreter
lock (dozens of attacking client threads there) nor its wait for a CPU on a loaded host.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from openenv.server._priority import favour_loop_thread


@contextlib.contextmanager
def health_polls(
    url: str, out: list[float], *, server_pid: int | None = None, waits: list[float] | None = None
) -> Iterator[None]:
    """/health every 50 ms from this script in a process of its own, into ``out`` at the
    end (a failed poll: infinity). Polled from the test process, a poll waited for that
    process's interpreter lock, held in turn by the attacking clients' threads: up to
    50 ms on a loaded host that the server (perf sched) had answered in 2. With
    ``server_pid``, ``waits`` gets each poll's wait of the server's loop for a CPU."""
    from tests._children import side_script  # not when run as the script

    pid = [] if server_pid is None else [str(server_pid)]
    with side_script(Path(__file__).resolve(), url, "0.05", *pid) as poller:
        yield
    out += [math.inf if s is None else s for s in poller.answer["polls"]]
    if waits is not None:
        waits += [0.0 if s is None else s for s in poller.answer["waits"]]


def main() -> None:
    url = urllib.parse.urlsplit(sys.argv[1])
    interval = float(sys.argv[2])
    schedstat = f"/proc/{sys.argv[3]}/task/{sys.argv[3]}/schedstat" if len(sys.argv) > 3 else None

    def queued() -> float | None:
        """Seconds the server's loop thread has waited runnable so far (None: unknown)."""
        if schedstat is None:
            return None
        try:
            with open(schedstat) as f:
                return int(f.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return None

    favour_loop_thread()
    stop = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    polls: list[float | None] = []
    waits: list[float | None] = []
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
    for _ in range(100_000):
        if stop.is_set():
            break
        before, start = queued(), time.monotonic()
        try:
            conn.request("GET", "/health")
            answer = conn.getresponse()
            answer.read()
            polls.append(time.monotonic() - start if answer.status == 200 else None)
        except (OSError, http.client.HTTPException):
            polls.append(None)
            conn.close()
            conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
        after = queued()
        waits.append(None if before is None or after is None else after - before)
        if len(polls) == 1:
            print("ready", flush=True)
        stop.wait(interval)
    print(json.dumps({"polls": polls, "waits": waits}), flush=True)


if __name__ == "__main__":
    main()
