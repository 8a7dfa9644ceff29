"""``Sandbox``: one session's contained process trees, their private directory and uid."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import resource
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import SandboxError, SandboxUnavailable
from . import _cgroup, _fairness, _procs, _tmpfs
from ._bwrap import INNER_TMP, INNER_WORKDIR, bwrap_argv, bwrap_works, has_disable_userns
from ._config import Isolation, Limits, SandboxConfig, SandboxLevel
from ._offloop import Process, spawn_off_loop
from ._run import Completed, spawn_and_run
from ._seccomp import current_arch, filter_file, launcher_prefix

_MARKER = "OPENENV_SANDBOX_ID"
#: The fd bubblewrap reads the seccomp program from (opened by the stage).
_SECCOMP_FD = 9
#: The first step of a process (``sh``, as the server's user): join the session's
#: cgroups, open the seccomp program on fd 9 for bubblewrap, then ``exec`` the rest.
#: Arguments: the program's path (or ""), the ``cgroup.procs`` files, ``--``, argv.
_STAGE = (
    's=$1; shift; while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; '
    '[ -z "$s" ] || exec "$@" 9<"$s"; exec "$@"'
)


def default_root() -> Path:
    return Path(tempfile.gettempdir()) / "openenv-sandbox"


def resolve_isolation(config: SandboxConfig) -> Isolation:
    """The isolation ``config`` gets on this machine; ``SandboxUnavailable`` for an
    impossible ``strict``. Probes bubblewrap once per process (as a sandbox uid when
    the server runs as root: one just past the leased range)."""
    if config.level is SandboxLevel.NONE:
        return Isolation.RLIMITS
    why = bwrap_works(config.uid_base + config.uid_count if os.geteuid() == 0 else None)
    if config.level is SandboxLevel.STRICT:
        if why:
            raise SandboxUnavailable(f"sandbox level 'strict' needs bubblewrap: {why}")
        _, _, missing = session_limits_support(config)
        if missing:
            raise SandboxUnavailable(f"sandbox level 'strict' needs the session limits: {missing}")
    return Isolation.RLIMITS if why else Isolation.BWRAP


def session_limits_support(config: SandboxConfig) -> tuple[_cgroup.CgroupHost | None, bool, str]:
    """(the cgroups to use or None, whether the tmpfs disk limit works, why some
    configured session limit cannot be enforced here: "" when all can)."""
    wanted = config.session_limits
    host, why = _cgroup.cgroup_host() if wanted.needs_cgroup else (None, "")
    disk_why = _tmpfs.tmpfs_works() if wanted.disk_bytes is not None else ""
    reasons = [r for r in (why, f"no disk limit: {disk_why}" if disk_why else "") if r]
    return host, wanted.disk_bytes is not None and not disk_why, "; ".join(reasons)


class Sandbox:
    """A private directory, a uid and the process trees started in them, killed as one.

    Every process gets the configured rlimits (``prlimit``), its own process group
    and, when the server runs as root, this sandbox's own unprivileged uid (leased
    from ``uid_base``; files in ``workdir`` are private to it). At ``Isolation.BWRAP``
    it also runs under bubblewrap: no network, read-only ``/usr`` and ``/etc``,
    ``workdir`` at ``/workspace``, a private ``/tmp`` and ``/dev/shm`` (one disk
    limit for the three; nothing else writable), its own PID namespace.

    >>> from openenv.sandbox import Sandbox, SandboxConfig
    >>> with Sandbox(SandboxConfig(level="auto")) as box:
    ...     done = box.run(["sh", "-c", "echo hi > f.txt; cat f.txt"], timeout_s=10)
    ...     (box.workdir / "f.txt").read_text(), done.exit_code, done.stdout
    ('hi\\n', 0, b'hi\\n')
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig.from_env()
        base = Path(self.config.root_dir) if self.config.root_dir else default_root()
        self._lease = None
        if os.geteuid() == 0:
            self._lease = _procs.lease_uid(base / ".uids", self.config.uid_base, self.config.uid_count)
            if self._lease is None:
                raise SandboxError(f"all {self.config.uid_count} sandbox uids are in use")
        self.uid = self._lease.uid if self._lease else os.getuid()
        self._cgroup: _cgroup.SessionCgroup | None = None
        self._fair = False  # watched by the CPU fairness monitor
        self._mounted = False
        try:
            self.isolation = resolve_isolation(self.config)
            self.id = secrets.token_hex(6)
            self._cgroup_host, self._disk, _ = session_limits_support(self.config)
            self.root = self._make_dirs(base)
            if self._cgroup_host is not None:
                limits = self.config.session_limits
                self._cgroup = _cgroup.SessionCgroup(self._cgroup_host, self.root.name, limits)
            self._watch_cpu()
            self._seccomp_file = self._filter_file(base)
        except BaseException as exc:
            self._undo()
            if isinstance(exc, OSError):
                raise SandboxError(f"could not set the sandbox up: {exc}") from exc
            raise
        self._groups: set[int] = set()
        self.closed = False

    # ---- where things are ------------------------------------------------------
    @property
    def workdir(self) -> Path:
        """The writable working directory, as the server sees it."""
        return self.root / "work"

    @property
    def tmpdir(self) -> Path:
        """The private temp directory, as the server sees it."""
        return self.root / "tmp"

    @property
    def shmdir(self) -> Path:
        """What the processes see as ``/dev/shm`` under bubblewrap, as the server sees it."""
        return self.root / "shm"

    @property
    def inner_workdir(self) -> str:
        """The working directory as the sandboxed processes see it."""
        return INNER_WORKDIR if self.isolation is Isolation.BWRAP else str(self.workdir)

    @property
    def inner_tmpdir(self) -> str:
        return INNER_TMP if self.isolation is Isolation.BWRAP else str(self.tmpdir)

    @property
    def network_filter(self) -> bool:
        """Whether processes start under the seccomp network filter (``rlimits`` level)."""
        return uses_network_filter(self.config, self.isolation)

    def describe(self) -> dict[str, Any]:
        """What is in force, for ``/health`` and ``/metadata``."""
        return describe(self.config, self.isolation, own_uid=self._lease is not None)

    def usage(self) -> dict[str, int]:
        """The kernel's counters for this session's cgroup (memory peak, limit hits,
        CPU use and throttling, process-limit hits); empty without one."""
        return self._cgroup.stats() if self._cgroup else {}

    def cgroup_pids(self) -> list[int]:
        """Every process now in this session's cgroup (empty without one)."""
        return self._cgroup.pids() if self._cgroup else []

    # ---- starting processes ----------------------------------------------------
    def command(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        binds: Mapping[str, str] | None = None,
        ro_binds: Mapping[str, str] | None = None,
        ctty: bool = False,
    ) -> list[str]:
        """The full command line that runs ``argv`` contained (limits, bubblewrap).

        ``binds`` / ``ro_binds`` map an inner path to a host path to show there
        (bubblewrap only: at ``rlimits`` the host paths are used as they are; see
        ``visible_path``). The sandbox's uid must be able to reach the host path
        (a directory under ``root`` is a safe place). ``ctty``: the process's stdin is a fresh terminal that
        becomes its controlling terminal (Ctrl-C and job control work).
        """
        if not argv:
            raise SandboxError("empty command")
        prefix: list[str] = _default_signals()
        bwrap = self.isolation is Isolation.BWRAP
        seccomp_file = self._seccomp_file if bwrap else None
        if self._cgroup or seccomp_file:
            procs = self._cgroup.procs_files if self._cgroup else []
            prefix += ["/bin/sh", "-c", _STAGE, "openenv-stage", seccomp_file or "", *procs, "--"]
        if self._lease:  # a prefix, not Popen(user=...): uvloop's subprocesses lack it
            uid = str(self.uid)
            prefix += [_which("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
        prlimit = shutil.which("prlimit")
        if prlimit:
            prefix += [prlimit, *self.config.limits.prlimit_args(), "--"]
        if self.config.seccomp and not bwrap:
            prefix += launcher_prefix(network=self.config.network) or []
        if ctty:
            prefix += [_which("setsid"), "--ctty"]
        if self.isolation is Isolation.BWRAP:
            extra = [(i, h, True) for i, h in (binds or {}).items()]
            extra += [(i, h, False) for i, h in (ro_binds or {}).items()]
            prefix += bwrap_argv(
                bwrap=_which("bwrap"),
                workdir=str(self.workdir),
                tmpdir=str(self.tmpdir),
                shmdir=str(self.shmdir),
                cwd=cwd or INNER_WORKDIR,
                network=self.config.network,
                ro_paths=self.config.ro_paths,
                binds=extra,
                new_session=not ctty,
                seccomp_fd=_SECCOMP_FD if seccomp_file else None,
            )
        return [*prefix, *argv]

    def visible_path(self, inner: str, host: str | Path) -> str:
        """Where a bound path appears to the processes: ``inner`` under bubblewrap,
        else the host path itself."""
        return inner if self.isolation is Isolation.BWRAP else str(host)

    def environ(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The clean environment a process gets: a small base, the config's, ``env``."""
        base = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": self.inner_workdir,
            "TMPDIR": self.inner_tmpdir,
            "USER": "sandbox",
            "LANG": "C.UTF-8",
            _MARKER: self.id,
        }
        return {**base, **self.config.env, **(env or {})}

    def popen_kwargs(
        self, *, cwd: str | None = None, env: Mapping[str, str] | None = None, ctty: bool = False
    ) -> dict[str, Any]:
        """Keyword arguments for ``subprocess.Popen`` / ``asyncio.create_subprocess_exec``."""
        self._check_open()
        # With ctty, ``setsid --ctty`` makes the new session (and takes the terminal).
        kwargs: dict[str, Any] = {"env": self.environ(env), "start_new_session": not ctty}
        if self.isolation is Isolation.BWRAP:
            kwargs["cwd"] = str(self.root)  # bwrap's --chdir sets the inner one
        else:
            kwargs["cwd"] = cwd or str(self.workdir)
        if not shutil.which("prlimit"):
            kwargs["preexec_fn"] = _LimitsPreexec(self.config.limits)
        return kwargs

    def popen(self, argv: Sequence[str], **kw: Any) -> subprocess.Popen[bytes]:
        """Start ``argv`` contained. Keywords: ``cwd`` (the inner path; default the
        workdir), ``env``, ``binds``, ``ro_binds``, ``ctty`` (see ``command``); the
        rest go to ``subprocess.Popen`` (``stdin``, ``stdout``, ...)."""
        cmd, kwargs = self._prepare(argv, kw)
        try:
            with _no_signal_blocked():
                proc = subprocess.Popen(cmd, **kwargs)
        except OSError as exc:
            raise SandboxError(f"could not start {argv[0]!r}: {exc}") from exc
        self._groups.add(proc.pid)
        return proc

    async def spawn(self, argv: Sequence[str], **kw: Any) -> Process:
        """``popen`` for asyncio, forked and exec'd off the event loop (``_offloop``): a
        ``Process`` with what ``asyncio.subprocess.Process`` offers (streams, ``wait()``)
        and ``close()`` for its pipes. Cancelled while the child starts, it kills it."""
        return await spawn_off_loop(functools.partial(self.popen, argv, **kw), self._groups)

    def _prepare(self, argv: Sequence[str], kw: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        cwd, env, ctty = kw.pop("cwd", None), kw.pop("env", None), kw.pop("ctty", False)
        binds, ro_binds = kw.pop("binds", None), kw.pop("ro_binds", None)
        cmd = self.command(argv, cwd=cwd, binds=binds, ro_binds=ro_binds, ctty=ctty)
        return cmd, {**self.popen_kwargs(cwd=cwd, env=env, ctty=ctty), **kw}

    def run(self, argv: Sequence[str], **kw: Any) -> Completed:
        """Run ``argv`` to completion (sync; not on a running event loop). See ``arun``."""
        return asyncio.run(self.arun(argv, **kw))

    async def arun(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        output_limit: int = 1 << 20,
        binds: Mapping[str, str] | None = None,
        ro_binds: Mapping[str, str] | None = None,
    ) -> Completed:
        """Run ``argv`` to completion with bounded output and a wall clock.

        ``timeout_s`` defaults to the config's ``limits.wall_s``; past it the
        process group is killed and ``timed_out`` is set. Each stream keeps its first
        and last ``output_limit / 2`` bytes.
        """
        limit = timeout_s if timeout_s is not None else self.config.limits.wall_s
        spawn = functools.partial(self.spawn, argv, cwd=cwd, env=env, binds=binds, ro_binds=ro_binds)
        return await spawn_and_run(
            spawn, self._groups, input=input, timeout_s=limit, output_limit=output_limit
        )

    def repin(self) -> None:
        """Pin to the least used cores now: call it when a sandbox made ahead of time
        (a pool's) is handed to a session. A no-op when the sandbox is not pinned."""
        if self._cgroup is not None:
            self._cgroup.repin()
        if self._fair:  # a new session: its CPU history starts now
            _fairness.monitor().restart(self.root.name)

    # ---- ending ----------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL every process this sandbox started and all they started.

        The uid's processes first, all in one ``kill(-1)``, the process groups last: a
        process that waits for the shell to die must not get to act in between.
        """
        if self._lease:
            _procs.kill_all_of_uid(self.uid)
        if self._cgroup:
            self._cgroup.kill()
        if not self._lease:
            _procs.kill_pids(_procs.pids_with_marker(f"{_MARKER}={self.id}".encode()))
        for pgid in list(self._groups):
            _procs.kill_group(pgid)
        self._groups.clear()

    def close(self) -> None:
        """Kill everything, delete the directory, give the uid back. Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            self.kill()
        finally:
            self._undo()

    def _undo(self) -> None:
        """Remove the cgroup, unmount and delete the directory, give the uid back."""
        try:
            if self._fair:
                _fairness.monitor().remove(self.root.name)
                self._fair = False
            if self._cgroup:
                self._cgroup.remove()
            root = getattr(self, "root", None)
            if root is not None:
                if self._mounted:
                    _tmpfs.unmount(str(root))
                _rmtree(root)
        finally:
            self._release_uid()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id!r}, isolation={self.isolation.value}, uid={self.uid})"

    # ---- internals ---------------------------------------------------------------
    def _make_dirs(self, base: Path) -> Path:
        base.mkdir(mode=0o711, parents=True, exist_ok=True)
        if self._lease:
            if base.stat().st_uid == os.geteuid():
                base.chmod(0o711)  # sandboxes may pass through, not list
            _remove_leftovers(base, self.uid, self._cgroup_host)  # a crashed holder's
            root = base / f"u{self.uid}-{self.id}"
        else:
            root = base / f"p{os.getpid()}-{self.id}"
        root.mkdir(mode=0o700)
        self.root = root
        if self._disk and self.config.session_limits.disk_bytes is not None:
            _tmpfs.mount_tmpfs(str(root), self.config.session_limits.disk_bytes, uid=self.uid)
            self._mounted = True
        subs = [root / "work", root / "tmp", root / "shm"]
        for path in subs:
            path.mkdir(mode=0o700)
        if self._lease:
            for path in (root, *subs):
                os.chown(path, self.uid, self.uid)
        return root

    def _watch_cpu(self) -> None:
        """Hand the session's cgroup to the CPU fairness monitor (``_fairness``)."""
        boost = self.config.session_limits.cpu_boost
        if boost is None or boost <= 1:
            return
        if self._cgroup is None:
            _, why = _cgroup.cgroup_host()
            _fairness.off_once(why or "the session has no cgroup")
            return
        found = self._cgroup.fairness(self.config.session_limits)
        if isinstance(found, str):
            _fairness.off_once(found)
            return
        counter, weight_file, base, boosted = found
        _fairness.monitor().add(self.root.name, counter, weight_file, base, boosted)
        self._fair = True

    def _filter_file(self, base: Path) -> str | None:
        """bubblewrap's seccomp program (a file in ``base``), or None when not used."""
        if self.isolation is not Isolation.BWRAP or not uses_seccomp(self.config):
            return None
        return filter_file(str(base), network=True)  # the network namespace does the rest

    def _release_uid(self) -> None:
        if self._lease:
            self._lease.release()

    def _check_open(self) -> None:
        if self.closed:
            raise SandboxError("the sandbox is closed")


def _remove_leftovers(base: Path, uid: int, host: _cgroup.CgroupHost | None) -> None:
    """Unmount and delete ``uid``'s sandbox directories and remove its cgroups (the
    caller holds its lease, so they are a crashed holder's)."""
    for stale in base.glob(f"u{uid}-*"):
        while _tmpfs.unmount(str(stale)):
            pass
        _rmtree(stale)
    if host is not None:
        _cgroup.sweep(host, f"u{uid}-")


def reclaim(config: SandboxConfig | None = None) -> list[int]:
    """Give back what servers killed with SIGKILL left (root only; a no-op otherwise):
    for each sandbox uid that no live process holds and that still has processes,
    directories or cgroups, kill the processes, unmount and delete the directories and
    remove the cgroups. Returns those uids. A server calls it when it starts; a uid is
    also cleaned whenever it is leased again."""
    config = config or SandboxConfig.from_env()
    if os.geteuid() != 0:
        return []
    base = Path(config.root_dir) if config.root_dir else default_root()
    lo, hi = config.uid_base, config.uid_base + config.uid_count
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    found.add(entry.stat().st_uid)
    names = [p.name for p in base.glob("u*-*")] if base.is_dir() else []
    host, _ = _cgroup.cgroup_host() if config.session_limits.needs_cgroup else (None, "")
    if host is not None:
        for parent in dict.fromkeys(host.parents.values()):
            with contextlib.suppress(OSError):
                names += [e.name for e in os.scandir(parent) if e.name.startswith("u")]
    for name in names:
        with contextlib.suppress(ValueError):
            found.add(int(name[1:].split("-", 1)[0]))
    done: list[int] = []
    uids = sorted(u for u in found if lo <= u < hi)
    if uids:
        (base / ".uids").mkdir(mode=0o700, parents=True, exist_ok=True)
    for uid in uids:
        # Zombies hold no file: the directories go even while init has not reaped them.
        lease = _procs.try_lease(base / ".uids", uid, zombies_ok=True)
        if lease is None:
            continue  # a live sandbox's
        try:
            _remove_leftovers(base, uid, host)
        finally:
            lease.release()
        done.append(uid)
    return done


def _which(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SandboxError(f"{name!r} is not installed")
    return path


def uses_network_filter(config: SandboxConfig, isolation: Isolation) -> bool:
    return isolation is Isolation.RLIMITS and not config.network and uses_seccomp(config)


def uses_seccomp(config: SandboxConfig) -> bool:
    """Whether processes start under the seccomp filter (at either level)."""
    return config.seccomp and current_arch() is not None


def describe(config: SandboxConfig, isolation: Isolation, *, own_uid: bool) -> dict[str, Any]:
    """The sandbox report for ``/health`` and ``/metadata``."""
    limits = config.limits
    block = None
    if not config.network:
        block = "namespace" if isolation is Isolation.BWRAP else None
        block = "seccomp" if uses_network_filter(config, isolation) else block
    return {
        "requested": config.level.value,
        "level": isolation.value,
        "network": block is None,
        "network_block": block,
        "filesystem": "private" if isolation is Isolation.BWRAP else "host",
        "own_uid": own_uid,
        "seccomp": uses_seccomp(config),
        "nested_userns": not (
            uses_seccomp(config) or (isolation is Isolation.BWRAP and _bwrap_disables_userns())
        ),
        "session_limits": _describe_session_limits(config),
        "limits": {
            "cpu_s": limits.cpu_s,
            "memory_bytes": limits.memory_bytes,
            "nproc": limits.nproc,
            "file_size_bytes": limits.file_size_bytes,
            "open_files": limits.open_files,
            "wall_s": limits.wall_s,
        },
    }


def _bwrap_disables_userns() -> bool:
    bwrap = shutil.which("bwrap")
    return bwrap is not None and has_disable_userns(bwrap)


def _describe_session_limits(config: SandboxConfig) -> dict[str, Any]:
    """The configured session limits and what enforces them (``cgroup``: ``cgroup-v1``,
    ``cgroup-v2`` or None; ``disk``: ``tmpfs`` or None); ``reason`` says what is missing."""
    wanted = config.session_limits
    host, disk, why = session_limits_support(config)
    return {
        **wanted.as_dict(),
        "cgroup": host.label if host is not None else None,
        "disk": "tmpfs" if disk else None,
        "enforced": wanted.any and not why,
        "reason": why or (None if wanted.any else "no session limits configured"),
    }


class _LimitsPreexec:
    """Applies the limits in the child when ``prlimit`` is missing."""

    def __init__(self, limits: Limits) -> None:
        names = {
            "cpu_s": resource.RLIMIT_CPU,
            "memory_bytes": resource.RLIMIT_AS,
            "nproc": resource.RLIMIT_NPROC,
            "file_size_bytes": resource.RLIMIT_FSIZE,
            "open_files": resource.RLIMIT_NOFILE,
        }
        self._pairs = [(res, getattr(limits, name)) for name, res in names.items()]
        self._pairs = [(res, value) for res, value in self._pairs if value is not None]
        self._pairs.append((resource.RLIMIT_CORE, 0))

    def __call__(self) -> None:
        for res, value in self._pairs:
            resource.setrlimit(res, (value, value))


def _rmtree(path: Path) -> None:
    """Remove a sandbox's directory, even parts the sandbox made unreadable."""

    def fix(func: Any, failed: str, exc_info: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    if path.exists():
        shutil.rmtree(path, onerror=fix)


def _default_signals() -> list[str]:
    """An ignored signal stays ignored across exec, and a shell started so can never take it
    back: a host started as ``openenv serve ... &`` from a script (a background job ignores
    SIGINT and SIGQUIT) would leave Ctrl-C dead in every session. When the host ignores
    them, the command starts through ``env --default-signal``, which puts them back to
    their defaults first; otherwise nothing is added."""
    names = [name for sig, name in ((signal.SIGINT, "INT"), (signal.SIGQUIT, "QUIT"))
             if signal.getsignal(sig) == signal.SIG_IGN]
    return [_which("env"), f"--default-signal={','.join(names)}", "--"] if names else []


@contextlib.contextmanager
def _no_signal_blocked() -> Any:
    """A child inherits the signal mask of the thread that forks it, and exec keeps it: with
    SIGINT blocked there (a library in the host process may block signals in its thread), a
    shell's Ctrl-C never reaches the command. The child starts with none blocked; the
    thread's own mask is put back at once."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    if blocked:
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
    try:
        yield
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
