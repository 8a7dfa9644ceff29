"""``gc()`` and ``openenv gc``: labelled orphans go, containers of live owners stay."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from openenv.containers import gc
from openenv.containers._docker import LABEL_IMAGE, LABEL_MANAGED, LABEL_OWNER

from .conftest import REPO, gc_turn, gone, owner_label

#: Costs nothing to run: a sleeping python under the image's dumb-init.
SLEEP = ["python3", "-c", "import time; time.sleep(600)"]


def dead_pid() -> int:
    """The pid of a process that has finished (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


@pytest.fixture
def labelled(docker: Any, echo_image: str, track: Callable[[Any], Any]) -> Iterator[Callable[[str], Any]]:
    """``labelled(owner)``: a running container with the openenv labels and that owner.
    The test holds the host's gc turn meanwhile (another test run's gc would take its
    orphan first)."""

    def start(owner: str) -> Any:
        container = docker.containers.run(
            echo_image,
            SLEEP,
            detach=True,
            labels={LABEL_MANAGED: "1", LABEL_OWNER: owner, LABEL_IMAGE: echo_image, "openenv.test": "gc"},
        )
        return track(container)

    with gc_turn():
        yield start


def test_gc_removes_orphans_of_dead_owners_and_keeps_live_ones(
    docker: Any, labelled: Callable[[str], Any]
) -> None:
    host = socket.gethostname()
    orphan = labelled(f"{host}:{dead_pid()}")
    mine = labelled(owner_label())  # this test process: alive
    elsewhere = labelled("some-other-host:1")  # not ours to judge

    removed = gc()

    assert orphan.name in removed
    assert mine.name not in removed
    assert elsewhere.name not in removed
    assert gone(docker, orphan.id)
    for kept in (mine, elsewhere):
        kept.reload()
        assert kept.status == "running"


def test_openenv_gc_cli_removes_orphans_and_keeps_live_ones(
    docker: Any, labelled: Callable[[str], Any]
) -> None:
    orphan = labelled(f"{socket.gethostname()}:{dead_pid()}")
    mine = labelled(owner_label())

    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "gc"], capture_output=True, text=True, timeout=60, cwd=REPO
    )

    assert proc.returncode == 0, proc.stderr
    assert f"removed {orphan.name}" in proc.stdout.splitlines()
    assert f"removed {mine.name}" not in proc.stdout.splitlines()
    assert "container(s) removed" in proc.stderr
    assert gone(docker, orphan.id)
    mine.reload()
    assert mine.status == "running"
