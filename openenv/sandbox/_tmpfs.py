"""A size-limited tmpfs for a sandbox's writable directories: its disk quota.

The sandbox's directory (``work/``, ``tmp/`` and ``shm/``: all it may write) is one
tmpfs of ``disk_bytes``; past it a write fails with ``ENOSPC``. Under bubblewrap these
are ``/workspace``, ``/tmp`` and ``/dev/shm``, and bubblewrap's own tmpfs mounts (the
root, ``/dev``) are read-only, so the one budget covers every byte a session can
store. Without bubblewrap (the ``rlimits`` level) there is no mount namespace: the
host's ``/tmp`` and ``/dev/shm`` stay writable to the sandbox's uid, outside the
limit; the container around the server is the boundary there. Mounting needs root (the
server's, in its mount namespace); it is unmounted at close, and a mount a crashed
server left is unmounted when its uid is leased again. tmpfs pages are memory: they
count towards the session's cgroup memory limit too (whoever writes them pays).
"""

from __future__ import annotations

import ctypes
import functools
import os
import tempfile

_MS_NOSUID, _MS_NODEV = 0x2, 0x4
_MNT_DETACH = 0x2


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(path: str, size: int, *, uid: int, mode: int = 0o700) -> None:
    """Mount a tmpfs of ``size`` bytes (owned by ``uid``) on ``path``; ``OSError`` if not."""
    options = f"size={size},mode={mode:o},uid={uid},gid={uid}".encode()
    flags = _MS_NOSUID | _MS_NODEV
    if _libc().mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs: {os.strerror(err)}", path)


def unmount(path: str) -> bool:
    """Detach the mount on ``path``; False when nothing was mounted there (or no right)."""
    return bool(_libc().umount2(os.fsencode(path), _MNT_DETACH) == 0)


def is_mount(path: str) -> bool:
    return os.path.ismount(path)


@functools.cache
def tmpfs_works() -> str:
    """Why a sandbox cannot get a size-limited tmpfs here ("" when it can). Probed once."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs a root server"
    probe = tempfile.mkdtemp(prefix="openenv-tmpfs-probe-")
    try:
        mount_tmpfs(probe, 1 << 20, uid=0)
    except OSError as exc:
        return f"cannot mount a tmpfs: {exc.strerror}"
    else:
        unmount(probe)
        return ""
    finally:
        os.rmdir(probe)
