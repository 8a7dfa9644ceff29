"""Layer filesystems formatted ahead, so that a cold reset with a disk limit does not
wait for ``mke2fs`` (10-100 ms under load; ``_disk.py``).

After a container's layer filesystem of a size is made, a background thread formats up
to ``SPARES`` empty ones of that size (sparse files, named like a session's, so the
sweep deletes those of a server that died). The next layer of that size takes one: the
layer folder's few entries (``link``, ``lower``, the empty ``diff`` and ``work``) are read,
the spare is mounted over the folder, and they are written back with their modes,
owners, extended attributes and times: what ``mke2fs -d`` copies. Spares are kept for
the ``SIZES`` sizes used last and deleted at the process's exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SPARES = 2
SIZES = 3
_MAX_ENTRIES = 64  # a layer folder at creation has six; more: not copied this way
_guard = threading.Lock()
_spares: dict[int, list[Path]] = {}  # size (MiB) -> formatted files, the size used last at the end
_filling: set[int] = set()
_hooked = False


@dataclass(frozen=True, slots=True)
class Entry:
    """One file, folder or link of a layer folder, as ``lstat`` saw it."""

    rel: str
    st: os.stat_result
    data: bytes | None  # a file's content
    target: str | None  # a link's
    xattrs: tuple[tuple[str, bytes], ...]


def take(size_mb: int) -> Path | None:
    """A formatted empty filesystem file of ``size_mb``, if one is ready (the caller owns it)."""
    with _guard:
        ready = _spares.get(size_mb)
        while ready:
            path = ready.pop()
            if path.exists():
                return path
    return None


def refill(size_mb: int, make: Callable[[Path, int], None]) -> None:
    """Format spares of ``size_mb`` in a background thread up to ``SPARES`` (one thread a
    size at a time); ``make(path, size_mb)`` formats one. Sizes used least recently go."""
    global _hooked
    with _guard:
        ready = _spares.pop(size_mb, [])
        _spares[size_mb] = ready  # the size used last, at the end
        for old in list(_spares)[:-SIZES]:
            for path in _spares.pop(old):
                path.unlink(missing_ok=True)
        if size_mb in _filling or len(ready) >= SPARES:
            return
        _filling.add(size_mb)
        if not _hooked:
            atexit.register(discard)
            _hooked = True
    threading.Thread(target=_fill, args=(size_mb, make), name="openenv-disk-spares", daemon=True).start()


def _fill(size_mb: int, make: Callable[[Path, int], None]) -> None:
    from . import _disk

    try:
        while True:
            with _guard:
                ready = _spares.get(size_mb)
                if ready is None or len(ready) >= SPARES:
                    return
            path = _disk.disk_file(f"spare-{secrets.token_hex(6)}")
            try:
                make(path, size_mb)
            except Exception:  # no spare: the next layer is formatted in its reset, as before
                path.unlink(missing_ok=True)
                return
            with _guard:
                ready = _spares.get(size_mb)
                if ready is None:  # evicted meanwhile
                    path.unlink(missing_ok=True)
                    return
                ready.append(path)
    finally:
        with _guard:
            _filling.discard(size_mb)


def discard() -> None:
    """Delete every spare not taken (at exit; a dead server's are swept by the next)."""
    with _guard:
        paths = [p for ready in _spares.values() for p in ready]
        _spares.clear()
    for path in paths:
        path.unlink(missing_ok=True)


def snapshot(folder: Path) -> list[Entry] | None:
    """The entries under ``folder``, parents first; None when there are more than a
    layer folder has at its creation, or one is not a file, folder or link."""
    out: list[Entry] = []
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(root, name)
            st = os.lstat(path)
            data = target = None
            if os.path.islink(path):
                target = os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    data = f.read()
            elif not os.path.isdir(path):
                return None
            names = os.listxattr(path, follow_symlinks=False)
            xattrs = tuple((k, os.getxattr(path, k, follow_symlinks=False)) for k in names)
            out.append(Entry(os.path.relpath(path, folder), st, data, target, xattrs))
            if len(out) > _MAX_ENTRIES:
                return None
    return out


def restore(folder: Path, entries: list[Entry]) -> None:
    """Write ``entries`` (of ``snapshot``) under ``folder``: content, mode, owner,
    extended attributes, then times (children first, so a folder's stay)."""
    import stat

    for e in entries:
        path = folder / e.rel
        if e.target is not None:
            os.symlink(e.target, path)
        elif e.data is not None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(e.data)
        else:
            os.mkdir(path, 0o700)
        os.chown(path, e.st.st_uid, e.st.st_gid, follow_symlinks=False)
        if e.target is None:
            os.chmod(path, stat.S_IMODE(e.st.st_mode))
        for key, value in e.xattrs:
            os.setxattr(path, key, value, follow_symlinks=False)
    for e in reversed(entries):
        with contextlib.suppress(NotImplementedError, OSError):
            os.utime(folder / e.rel, ns=(e.st.st_atime_ns, e.st.st_mtime_ns), follow_symlinks=False)
