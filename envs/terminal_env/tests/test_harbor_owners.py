"""Two servers on one engine: a server that starts (or restarts) removes the session
containers of a server that died, and never those of one that is alive, even while that
one removes its own containers in the middle of the sweep (two test suites at once on
one machine once failed with Docker's "No such container" here).

The ownership rules (``_owner.owner_gone``) are checked without Docker; the sweep with
real server processes on a real engine (skipped only where no engine answers). Another
test run's sweep on the same engine may remove the dead server's container first: gone
is gone, by whichever sweep.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _harbor_fixtures import TASKS, docker_base
from terminal_env._disk import DISK_LABEL, usable
from terminal_env._owner import OWNER_LABEL, PROC_LABEL, boot_id, owner_gone, owner_labels, pid_namespace

HOST = socket.gethostname()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_an_owner_is_gone_only_when_that_is_certain() -> None:
    ours = owner_labels("t")
    me, start = os.getpid(), ours[PROC_LABEL].rsplit(":", 1)[1]
    assert ours[OWNER_LABEL].startswith(f"{HOST}:{me}:")
    assert start.isdigit()

    def labels(pid: int, proc: str | None = None, host: str = HOST) -> dict[str, str]:
        out = {OWNER_LABEL: f"{host}:{pid}:x"}
        if proc is not None:
            out[PROC_LABEL] = proc
        return out

    dead = _dead_pid()
    assert not owner_gone(ours)  # this live process
    assert not owner_gone(labels(me))  # an older server's labels: pid alone, alive
    assert owner_gone(labels(dead))  # pid alone, gone
    assert owner_gone(labels(dead, f"{boot_id()}:{pid_namespace()}:{start}"))
    # our pid, but it started at another time: the owner died and its pid was reused
    assert owner_gone(labels(me, f"{boot_id()}:{pid_namespace()}:{int(start) + 1}"))
    # another PID namespace (a server in a container on this engine): its pids mean nothing here
    assert not owner_gone(labels(dead, f"{boot_id()}:4026531999:{start}"))
    # an earlier boot of this machine: nothing of then runs
    assert owner_gone(labels(me, f"00000000-0000-0000-0000-000000000000:{pid_namespace()}:{start}"))
    # another host's server, or a label that is not ours to read
    assert not owner_gone(labels(dead, host=HOST + "-other"))
    assert not owner_gone({OWNER_LABEL: "garbage"})


#: A server process holding session containers of a task's image: it prints their ids,
#: then "close ID" removes one (as a session's end does) and EOF shuts it down.
SERVER = """
import sys
from pathlib import Path
from terminal_env._task_images import TaskImages
from terminal_env._tasks import TerminalTask
from openenv.sandbox import SessionLimits

task = TerminalTask.from_dir(Path(sys.argv[1]))
images = TaskImages(SessionLimits.parse("disk=64M"), sys.argv[2])  # a layer filesystem each (_disk.py)
boxes = {box.id: box for box in (images.box(task) for _ in range(int(sys.argv[3])))}
print(" ".join(boxes), flush=True)
for line in sys.stdin:
    boxes.pop(line.split()[1]).close()
    print("closed", flush=True)
images.close()
"""


@contextmanager
def server(base: str, sessions: int) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(TASKS / "word-counts"), base, str(sessions)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ids = proc.stdout.readline().split() if proc.stdout else []
        assert len(ids) == sessions, f"the server process made no containers (exit {proc.poll()})"
        yield proc, ids
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _mounted(layer: Path) -> bool:
    return f" {layer} " in Path("/proc/self/mountinfo").read_text()


def _state(client: Any, container_id: str) -> str:
    import docker.errors

    try:
        return str(client.api.inspect_container(container_id)["State"]["Status"])
    except docker.errors.NotFound:
        return "gone"


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_a_restarting_server_reclaims_a_dead_servers_containers_not_a_live_ones() -> None:
    from terminal_env._task_images import TaskImages, sweep_orphans
    from terminal_env._tasks import TerminalTask

    from openenv.containers._docker import docker_client
    from openenv.sandbox import SessionLimits

    base = docker_base()
    TaskImages(SessionLimits.off(), base).image(TerminalTask.from_dir(TASKS / "word-counts"))  # built once
    client = docker_client()
    try:
        with server(base, 1) as (first, (left,)), server(base, 2) as (live, (closing, staying)):
            disk_file = client.containers.get(left).labels.get(DISK_LABEL)
            layer = Path(client.api.inspect_container(left)["GraphDriver"]["Data"]["UpperDir"]).parent
            assert not usable() or (disk_file and Path(disk_file).exists() and _mounted(layer))
            first.kill()  # the first server dies without closing anything
            first.wait()

            # The restarted server sweeps on its first use of the engine. The live server
            # ends a session meanwhile: between the sweep's listing and its look at it.
            sweeping = docker_client()
            inspect = sweeping.api.inspect_container
            raced = []

            def racing(container_id: str, *args: Any, **kw: Any) -> Any:
                if container_id == closing and not raced and live.stdin and live.stdout:
                    live.stdin.write(f"close {closing}\n")
                    live.stdin.flush()
                    raced.append(live.stdout.readline().strip())
                return inspect(container_id, *args, **kw)

            sweeping.api.inspect_container = racing
            try:
                removed = sweep_orphans(sweeping)
            finally:
                sweeping.close()
            assert raced == ["closed"]
            assert left in removed or _state(client, left) == "gone"  # another run's sweep may be first
            assert closing not in removed
            assert staying not in removed
            assert _state(client, left) == "gone"
            assert not _mounted(layer)  # its layer filesystem unmounted and its file deleted
            assert not (disk_file and Path(disk_file).exists())
            assert _state(client, closing) == "gone"  # its own server removed it
            assert _state(client, staying) == "running"
        assert _state(client, staying) == "gone"  # removed by its server's shutdown
    finally:
        client.close()
