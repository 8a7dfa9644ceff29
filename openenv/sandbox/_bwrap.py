"""bubblewrap: the command line that wraps a process, and a probe that it works here."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence

#: Where the sandbox's private directories appear inside bubblewrap.
INNER_WORKDIR = "/workspace"
INNER_TMP = "/tmp"
INNER_SHM = "/dev/shm"

# Merged-/usr systems make these symlinks into /usr; others are real directories.
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or None."""
    return shutil.which("bwrap")


def system_binds() -> list[str]:
    """Read-only ``/usr`` and ``/etc``, and the top-level links or dirs into them."""
    args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for path in _TOP_LEVEL:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def bwrap_argv(
    *,
    bwrap: str,
    workdir: str,
    tmpdir: str,
    shmdir: str,
    cwd: str,
    network: bool,
    ro_paths: Sequence[str] = (),
    binds: Sequence[tuple[str, str, bool]] = (),
    new_session: bool = True,
    seccomp_fd: int | None = None,
) -> list[str]:
    """``bwrap`` options (ending in ``--``) for one process tree.

    Every namespace is new (user, PID, network, IPC, UTS, cgroup) unless ``network``;
    no further user namespace can be made inside (``--disable-userns`` where this
    bubblewrap has it); the system is read-only; ``workdir``, ``tmpdir`` and
    ``shmdir`` are the only writable places (at ``/workspace``, ``/tmp`` and
    ``/dev/shm``), plus ``binds`` (inner path, host path, writable); the tree dies with
    its parent. bubblewrap's own tmpfs mounts (the new root and ``/dev``, each as large
    as half the host's memory) are made read-only once set up, so every byte a process
    can store is in the host directories given (the caller's disk limit: one tmpfs).
    ``seccomp_fd``: an open file descriptor bubblewrap reads a seccomp program from and
    loads before the command.
    """
    args = [bwrap, "--unshare-all"]
    if network:
        args.append("--share-net")
    if has_disable_userns(bwrap):
        args += ["--unshare-user", "--disable-userns"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--die-with-parent", "--hostname", "sandbox"]
    if new_session:  # else the caller gave it a fresh terminal of its own (setsid --ctty)
        args.append("--new-session")
    args += system_binds()
    for path in ro_paths:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--bind", workdir, INNER_WORKDIR, "--bind", tmpdir, INNER_TMP, "--bind", shmdir, INNER_SHM]
    for inner, host, writable in binds:
        args += ["--bind" if writable else "--ro-bind", host, inner]
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]  # after every mount point is made
    args += ["--chdir", cwd, "--"]
    return args


@functools.cache
def has_disable_userns(bwrap: str) -> bool:
    """Whether this bubblewrap has ``--disable-userns`` (0.8.0 and later)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return b"--disable-userns" in done.stdout + done.stderr


@functools.cache
def bwrap_works(uid: int | None) -> str:
    """Why bubblewrap cannot run here as ``uid`` ("" when it can). Probed once per uid.

    Inside a default Docker container this fails (no user namespaces under its
    seccomp profile); on a plain Linux host it works as root and unprivileged.
    """
    bwrap = bwrap_path()
    if bwrap is None:
        return "bwrap is not installed (apt-get install bubblewrap)"
    argv = [bwrap, "--unshare-all", "--die-with-parent", *system_binds()]
    argv += ["--proc", "/proc", "--dev", "/dev", "--", "true"]
    user = uid if uid is not None and uid != os.getuid() else None
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=10, user=user, group=user, extra_groups=[] if user else None
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap failed to start: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot create namespaces here: {err[-1] if err else done.returncode}"
    return ""
