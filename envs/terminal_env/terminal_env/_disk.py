"""A session container's disk limit where the engine's storage driver cannot size one
(overlay2 on ext4: Docker's ``--storage-opt size`` needs xfs with ``pquota``).

The container's writable layer gets a filesystem of its own, of the limit's size.
overlay2 keeps a container's writes in its layer folder,
``/var/lib/docker/overlay2/<layer>/diff`` (the overlay's upper dir) beside ``work/``.
Between the container's creation and its start, the server formats a sparse file of the
limit's size as ext4 with the layer folder's files copied in (``mke2fs -d``: ``link``,
``lower``, the empty ``diff`` and ``work``) and mounts it, through a loop device, over
that folder. The engine then mounts the container's root with its upper dir on that
filesystem: past the limit any write anywhere in the container fails with ``ENOSPC``,
and ``df /`` in it shows the limit. Another session's layer is another filesystem.

At the end the container is removed: the engine unmounts the filesystem with the
layer folder (Docker 20.10 does; where the removal is refused, the container is
stopped and the filesystem unmounted first), then its file is deleted. A server that
died leaves them mounted: the orphan sweep removes its containers the same way, and
deletes the files of owners that are gone.

It needs root, ``mke2fs``, loop devices (``_loop.py``), an overlay2 engine on this
machine in this mount namespace (its layer folder is visible here); after the start the
container's root is checked to be the engine's overlay on this filesystem. Where any of
that fails the limit is not enforced and the session's ``sandbox`` says why.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from . import _disk_spares, _loop
from ._owner import start_ticks

#: The file of a container's layer filesystem (a label, for the sweep of a dead server's).
DISK_LABEL = "openenv.terminal.disk"
DISK_DIR = Path(os.environ.get("OPENENV_TERMINAL_DISK_DIR", "/var/tmp/openenv-disks"))


class DiskRefused(OSError):
    """The bounded layer cannot be made here (the message says why, in one line)."""


def disk_file(token: str) -> Path:
    """Where a new session's layer filesystem goes: named after this process (pid and
    start time) so the sweep can tell a dead owner's file."""
    pid = os.getpid()
    return DISK_DIR / f"{pid}-{start_ticks(pid)}-{token}.ext4"


def usable() -> str:
    """ "" when bounded layers can be made by this process, else why not."""
    if os.geteuid() != 0:
        return "mounting a filesystem for the container's writes needs root"
    if shutil.which("mke2fs") is None:
        return "no mke2fs on PATH (e2fsprogs)"
    return ""


def layer_dir(container: Any) -> Path:
    """The container's layer folder (the parent of its overlay upper dir)."""
    data = (container.attrs.get("GraphDriver") or {}).get("Data") or {}
    upper = data.get("UpperDir")
    if container.attrs.get("GraphDriver", {}).get("Name") != "overlay2" or not upper:
        raise DiskRefused("the engine's storage driver is not overlay2")
    return Path(upper).parent


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        why = " ".join((done.stderr or done.stdout).split())[:200]
        raise DiskRefused(f"{argv[0]} failed: {why}")


def format_file(path: Path, size_mb: int, content: Path | None = None) -> None:
    """A sparse file of ``size_mb`` formatted as ext4, with ``content``'s files copied in."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path, "wb") as f:
        f.truncate(size_mb << 20)
    copy = ["-d", str(content)] if content is not None else []
    _run(["mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", "-O", "^has_journal",
          "-E", "nodiscard,lazy_itable_init=1", *copy, str(path)])  # fmt: skip


def attach(container: Any, path: Path, size_mb: int) -> Path:
    """Put the created (not started) container's writable layer on a new filesystem of
    ``size_mb`` in ``path``; the layer folder it is mounted on. A spare formatted ahead
    (``_disk_spares.py``) is used where one is ready, else one is formatted now."""
    layer = layer_dir(container)
    if not (layer / "diff").is_dir():
        raise DiskRefused(f"the engine's layer folder {layer} is not seen here (another machine or mounts)")
    mode = layer.stat().st_mode & 0o7777
    entries = _disk_spares.snapshot(layer)
    spare = _disk_spares.take(size_mb) if entries is not None else None
    try:
        if spare is not None:
            spare.rename(path)
        else:
            format_file(path, size_mb, layer)
        try:
            _loop.mount_image(str(path), str(layer), options="noinit_itable")
        except OSError:  # no LOOP_CONFIGURE (Linux < 5.8): mount(8) sets the device up
            _run(["mount", "-o", "loop,noinit_itable,nosuid,nodev", str(path), str(layer)])
        if spare is not None and entries is not None:
            try:
                _disk_spares.restore(layer, entries)
            except BaseException:
                detach(layer, None)
                raise
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):
        (layer / "lost+found").rmdir()
    os.chmod(layer, mode)
    if entries is not None:
        _disk_spares.refill(size_mb, format_file)
    return layer


def holds(layer: Path) -> bool:
    """After the start: the container's root is the engine's overlay, mounted here on the
    layer filesystem (same size), so the engine sees the mount (same mount namespace)."""
    merged = layer / "merged"
    try:
        return os.path.ismount(merged) and os.statvfs(merged).f_blocks == os.statvfs(layer).f_blocks
    except OSError:
        return False


def detach(layer: Path | None, path: Path | None) -> None:
    """Unmount the layer filesystem (the container stopped first) and delete its file.
    Idempotent; lazy where it is still busy."""
    if layer is not None and os.path.ismount(layer):
        _loop.unmount(str(layer))
    if path is not None:
        path.unlink(missing_ok=True)


def sweep_files(gone: Any) -> list[Path]:
    """Delete the layer files of owners that are gone (``gone(pid, start)``) and that are
    mounted nowhere; the files deleted."""
    deleted: list[Path] = []
    if not DISK_DIR.is_dir():
        return deleted
    try:
        mounted = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return deleted
    for path in DISK_DIR.glob("*.ext4"):
        pid, _, rest = path.name.partition("-")
        start = rest.partition("-")[0]
        if not pid.isdigit() or not gone(int(pid), start) or _backs_a_mount(path, mounted):
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            deleted.append(path)
    return deleted


def _backs_a_mount(path: Path, mountinfo: str) -> bool:
    """Whether a loop device over ``path`` is still mounted (its backing file named in sysfs)."""
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            if backing.read_text().strip() == str(path):
                dev = backing.parent.parent.name
                if f" /dev/{dev} " in mountinfo:
                    return True
    return False
