"""The disk limit inside a task's container holds on an engine whose storage driver cannot
size a container (overlay2 on ext4): the container's writable layer is a filesystem of
the limit's size (``_disk.py``). A session writing past it gets ENOSPC anywhere in its
container while another session of the same task writes on; nothing of either is left
mounted or on disk after the close.

Real Docker and real mounts; skipped only where no engine answers or the server is not
root (the reason says so).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _harbor_fixtures import TASKS, docker_base, sh, task_env
from terminal_env import SubmitAction

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

#: Every block, then every inode it can still get.
FILL = (
    "dd if=/dev/zero of=/var/big bs=1M count=100 2>/dev/null; dd if=/dev/zero of=/var/big2 bs=1k 2>/dev/null;"
    " i=0; while [ $i -lt 3000 ] && touch /var/t$i 2>/dev/null; do i=$((i+1)); done"
)


def _mounted(layer: Path) -> bool:
    return f" {layer} " in Path("/proc/self/mountinfo").read_text()


async def test_a_session_past_its_disk_limit_gets_enospc_and_its_neighbour_does_not() -> None:
    from terminal_env import _disk

    base = docker_base()
    if _disk.usable():
        pytest.skip(f"the container's own filesystem cannot be made here: {_disk.usable()}")
    async with (
        task_env(TASKS, base, session_limits="disk=64M") as a,
        task_env(TASKS, base, session_limits="disk=64M") as b,
    ):
        await a.reset(options={"task_id": "word-counts"})
        await b.reset(options={"task_id": "word-counts"})
        boxes = [env._shell.sandbox for env in (a, b) if env._shell is not None]
        assert [box.limits.disk_mb for box in boxes] == [64, 64]
        assert all("disk" not in box.describe() for box in boxes), [box.describe() for box in boxes]
        layers = [(box._layer, box._disk_file) for box in boxes]

        full = await sh(a, "dd if=/dev/zero of=/var/big bs=1M count=100; echo status=$?; df -m / | tail -1")
        assert "No space left on device" in full.output, full.output
        assert "status=1" in full.output
        size_mb = int(full.output.split("status=1")[1].split()[1])
        assert 32 <= size_mb <= 64, full.output  # df / in the container shows the limit
        # the neighbour of the same task and limit is unaffected, in its root and its workdir
        other = await sh(b, "dd if=/dev/zero of=/app/big bs=1M count=40 status=none; echo status=$?")
        assert "status=0" in other.output, other.output
        # the full session frees what it wrote and writes again
        again = await sh(a, "rm /var/big && echo kept > /app/x && cat /app/x")
        assert again.output.strip() == "kept", again.output
        # filled to the last block, the verifier's tests cannot go in: 0, and the breakdown says why
        await sh(a, FILL)
        scored = await a.step(SubmitAction())
        assert scored.reward == 0.0
        assert "the session's disk is full" in scored.metadata["reward_breakdown"]["error"], scored.metadata
    for layer, disk_file in layers:
        assert layer is not None
        assert disk_file is not None
        assert not _mounted(layer), f"{layer} still mounted after the close"
        assert not disk_file.exists(), f"{disk_file} left after the close"


async def test_where_the_layer_filesystem_cannot_be_made_the_session_runs_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from terminal_env import _disk

    monkeypatch.setattr(_disk, "DISK_DIR", Path("/proc/openenv-disks"))  # no file can go there
    async with task_env(TASKS, docker_base(), session_limits="disk=64M") as env:
        await env.reset(options={"task_id": "word-counts"})
        note = (await env.state()).sandbox.get("disk", "")
        assert note.startswith("not enforced: "), note
        assert "/proc/openenv-disks" in note or "root" in note, note
        assert (await sh(env, "echo still here")).output.strip() == "still here"
