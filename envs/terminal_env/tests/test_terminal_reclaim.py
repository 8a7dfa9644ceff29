"""A terminal server killed with SIGKILL closes nothing: its sessions' and its warm
pool's sandboxes (directories, mounts, cgroups, processes) stay. The next terminal
server to start gives back every one whose uid no live process holds
(``openenv.sandbox._sandbox.reclaim``, as the coding env does)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path

import pytest
from _terminal_fixtures import LEVELS, ROOT, served
from terminal_env import MODELS, RunAction

from openenv import EnvClient
from openenv.sandbox._cgroup import cgroup_host
from openenv.sandbox._procs import pids_of_uid
from openenv.sandbox._sandbox import default_root

pytestmark = pytest.mark.skipif(not ROOT, reason="sandbox uids (and reclaim) need root")


def _sandbox_of(env: EnvClient) -> str:
    """The session's sandbox directory (``u<uid>-<id>``): its uid is its alone."""
    uid = int(env.step(RunAction(command="id -u")).observation.output)
    names = [p.name for p in default_root().glob(f"u{uid}-*")]
    assert len(names) == 1, names
    return names[0]


def _held_sandboxes(pid: int) -> list[str]:
    """The sandbox directories of every uid process ``pid`` holds (its open uid lock
    files): its sessions' and its warm pool's."""
    names = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            m = re.search(r"/\.uids/(\d+)\.lock$", os.readlink(f"/proc/{pid}/fd/{fd}"))
            if m:
                names += [p.name for p in default_root().glob(f"u{m.group(1)}-*")]
    return names


def _uid_of(name: str) -> int:
    return int(name[1:].split("-", 1)[0])


def _left(names: list[str], procs: dict[int, set[int]]) -> list[str]:
    """What is left of these sandboxes: directories, mounts, cgroups, and which of
    ``procs`` (per uid: the processes seen when the server was killed) still run. Only
    those count: a uid given back may be leased at once by another server on this host
    (a second suite), whose processes are not ours."""
    left = []
    root = default_root()
    mounts = Path("/proc/self/mountinfo").read_text()
    host, _ = cgroup_host()
    for name in names:
        uid = _uid_of(name)
        if (root / name).exists():
            left.append(f"directory {root / name}")
        if f"/{name} " in mounts:
            left.append(f"mount of {name}")
        if host is not None:
            left += [f"cgroup {path}" for path in host.dirs(name) if path.exists()]
        left += [f"process {pid} of uid {uid}" for pid in sorted(set(pids_of_uid(uid)) & procs[uid])]
    return left


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_the_next_server_reclaims_what_a_sigkilled_one_left(level: str) -> None:
    with served(level) as first:
        names = []
        clients = [EnvClient(first.base_url, MODELS, timeout_s=60) for _ in range(2)]
        try:
            for env in clients:
                env.reset(free_shell=True)
                names.append(_sandbox_of(env))
                env.step(RunAction(command="(setsid sleep 983 >/dev/null 2>&1 &); echo started"))
            until, pooled = time.monotonic() + 15, []
            while not pooled and time.monotonic() < until:  # the warm pool refills
                time.sleep(0.2)
                pooled = [n for n in _held_sandboxes(first.proc.pid) if n not in names]
            assert pooled, "no warm shell in the pool"
            names += pooled
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait(timeout=10)
            procs = {uid: set(pids_of_uid(uid)) for uid in map(_uid_of, names)}
        finally:
            for env in clients:
                with contextlib.suppress(Exception):  # its server is gone
                    env.close()
    # At once: another server starting on the host (a second suite) may reclaim them too.
    assert _left(names, procs), "the SIGKILL left nothing to reclaim: the test shows nothing"
    with served(level):
        deadline = time.monotonic() + 20
        while (left := _left(names, procs)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == []
