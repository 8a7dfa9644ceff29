"""The disk limit inside a task's container holds on an engine whose storage driver cannot
size a container (overlay2 on ext4): the container's writable layer is a filesystem of
the limit's size (``_disk.py``). A session writing past it gets ENOSPC anywhere in its
container while another session of the same task writes on; nothing of either is left
mounted or on disk after the close.

Real Docker and real mounts; skipped only where no engine answers or the server is not
root (the reason says so).
"""

from __future__ import annotations

import os
import time
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


async def test_a_session_past_its_disk_limit_gets_enospc_and_its_neighbour_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Session ``a`` gets a filesystem formatted ahead (a spare), ``b`` one formatted in
    its reset: the limit holds on both."""
    from terminal_env import _disk, _disk_spares

    base = docker_base()
    if _disk.usable():
        pytest.skip(f"the container's own filesystem cannot be made here: {_disk.usable()}")
    monkeypatch.setattr(_disk_spares, "refill", lambda size_mb, make: None)  # the one spare below
    spare = _disk.disk_file("spare-test")
    _disk.format_file(spare, 64)
    spare_inode = spare.stat().st_ino
    # The first take gets this spare, whatever an earlier test's filling thread (still
    # formatting 64 MiB spares under load) put in the shared list meanwhile; no container
    # is started ahead (image_pool_size=0: a warm-up's start raced a's for the spare), so
    # the first take is a's reset and the second b's.
    given: list[int] = []

    def take(size_mb: int) -> Path | None:
        given.append(size_mb)
        return spare if len(given) == 1 and size_mb == 64 else None

    monkeypatch.setattr(_disk_spares, "take", take)
    async with (
        task_env(TASKS, base, session_limits="disk=64M", image_pool_size=0) as a,
        task_env(TASKS, base, session_limits="disk=64M", image_pool_size=0) as b,
    ):
        await a.reset(options={"task_id": "word-counts"})
        await b.reset(options={"task_id": "word-counts"})
        boxes = [env._shell.sandbox for env in (a, b) if env._shell is not None]
        assert [box.limits.disk_mb for box in boxes] == [64, 64]
        assert all("disk" not in box.describe() for box in boxes), [box.describe() for box in boxes]
        layers = [(box._layer, box._disk_file) for box in boxes]
        assert [f.stat().st_ino == spare_inode for _, f in layers if f] == [True, False], given
        assert not spare.exists()
        assert given == [64, 64]  # each reset asked for a spare; only the first had one
        # the spare's layer folder holds what the engine wrote there before the start
        assert all((layer / name).exists() for layer, _ in layers if layer for name in ("link", "lower"))

        full = await sh(a, "dd if=/dev/zero of=/var/big bs=1M count=100; echo status=$?; df -m / | tail -1")
        assert "No space left on device" in full.output, full.output
        assert "status=1" in full.output
        size_mb = int(full.output.split("status=1")[1].split()[1])
        assert 32 <= size_mb <= 64, full.output  # df / in the container shows the limit
        # the neighbour of the same task and limit is unaffected, in its root and its workdir
        other = await sh(b, "dd if=/dev/zero of=/app/big bs=1M count=40 status=none; echo status=$?")
        assert "status=0" in other.output, other.output
        full_b = await sh(b, "dd if=/dev/zero of=/var/big bs=1M count=100; echo status=$?")
        assert "No space left on device" in full_b.output, full_b.output
        assert "status=1" in full_b.output, full_b.output
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


def test_spares_are_formatted_ahead_and_a_layer_folder_copies_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Docker: spares of a size are made in the background up to ``SPARES`` and
    deleted by ``discard``; a folder's entries come back with modes, owners and links."""
    import shutil

    from terminal_env import _disk, _disk_spares

    if shutil.which("mke2fs") is None:
        pytest.skip("no mke2fs on PATH (e2fsprogs)")
    monkeypatch.setattr(_disk, "DISK_DIR", tmp_path / "disks")
    monkeypatch.setattr(_disk_spares, "_spares", {})
    _disk_spares.refill(8, _disk.format_file)
    for _ in range(600):  # 60 s at most
        if len(_disk_spares._spares[8]) == _disk_spares.SPARES and 8 not in _disk_spares._filling:
            break
        time.sleep(0.1)
    files = sorted((tmp_path / "disks").glob("*-spare-*.ext4"))
    assert len(files) == _disk_spares.SPARES, files
    assert all(f.stat().st_size == 8 << 20 for f in files)
    taken = _disk_spares.take(8)
    assert taken in files
    _disk_spares.discard()
    assert sorted((tmp_path / "disks").glob("*.ext4")) == [taken]

    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "work" / "work").mkdir(parents=True)
    (src / "work" / "work").chmod(0)
    (src / "lower").write_text("l/ABC:l/DEF")
    (src / "l").symlink_to("lower")
    dst.mkdir()
    entries = _disk_spares.snapshot(src)
    assert entries is not None
    _disk_spares.restore(dst, entries)
    assert (dst / "lower").read_text() == "l/ABC:l/DEF"
    assert os.readlink(dst / "l") == "lower"
    assert (dst / "work" / "work").stat().st_mode & 0o7777 == 0
    assert (dst / "work").stat().st_mode == (src / "work").stat().st_mode
