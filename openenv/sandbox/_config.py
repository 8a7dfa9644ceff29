"""What a sandbox is asked for (``SandboxConfig``) and what it gives (``Isolation``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from .._exceptions import SandboxError

GiB = 1 << 30
MiB = 1 << 20


class SandboxLevel(StrEnum):
    """The containment asked for (``SandboxConfig(level=...)``, ``OPENENV_SANDBOX``).

    Attributes:
        STRICT: bubblewrap namespaces or nothing: a sandbox refuses to start without them.
        AUTO: bubblewrap where it works, else rlimits and an unprivileged uid only.
        NONE: never bubblewrap; rlimits, a process group and the uid drop still apply.
    """

    STRICT = "strict"
    AUTO = "auto"
    NONE = "none"


class Isolation(StrEnum):
    """The containment in force, as reported in ``/health`` and ``/metadata``.

    Attributes:
        BWRAP: bubblewrap: no network, read-only system, private workdir and ``/tmp``,
            own PID namespace; plus everything ``RLIMITS`` gives.
        RLIMITS: resource limits, an own process group killed as a whole, a private
            uid per sandbox when the server runs as root. No network or file isolation
            beyond file permissions: the outer boundary is the container.
    """

    BWRAP = "bwrap"
    RLIMITS = "rlimits"


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-process resource limits (rlimits) and a default wall clock. None: no limit.

    ``nproc`` counts every process of the sandbox's uid, so it is a per-sandbox limit
    only where each sandbox has its own uid (a root server); ``memory_bytes`` is the
    address space of each process.
    """

    cpu_s: int | None = 600
    memory_bytes: int | None = 2 * GiB
    nproc: int | None = 256
    file_size_bytes: int | None = 256 * MiB
    open_files: int | None = 1024
    wall_s: float | None = 600.0

    def prlimit_args(self) -> list[str]:
        """``prlimit`` options that apply these limits (soft = hard)."""
        pairs = [
            ("cpu", self.cpu_s),
            ("as", self.memory_bytes),
            ("nproc", self.nproc),
            ("fsize", self.file_size_bytes),
            ("nofile", self.open_files),
            ("core", 0),
        ]
        return [f"--{name}={value}" for name, value in pairs if value is not None]


_SESSION_FIELDS = ("memory_bytes", "cpus", "cpu_weight", "cpu_boost", "pids", "disk_bytes")
_UNITS = {"": 1, "k": 1 << 10, "m": MiB, "g": GiB, "t": 1 << 40}


def _size(text: str) -> int:
    """``"512M"`` -> bytes (K, M, G, T: powers of 1024; no suffix: bytes)."""
    number, unit = (text[:-1], text[-1].lower()) if text[-1:].isalpha() else (text, "")
    if unit not in _UNITS:
        raise ValueError(text)
    return int(float(number) * _UNITS[unit])


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Limits on a sandbox's whole process tree, enforced by the kernel (cgroups and a
    tmpfs; see ``docs/sandbox.md``). None: no limit of that kind.

    Attributes:
        memory_bytes: memory of all processes together (and of the session's tmpfs);
            past it the OOM killer ends one of the session's processes.
        cpus: CPU time as a number of cores (CFS quota; ``0.5``: half a core).
        cpu_weight: the session's share when the CPU is contended (cgroup v2 scale
            1-10000, 100 the default; v1 ``cpu.shares`` = weight * 1024 / 100).
        cpu_boost: the weight of a session that has used little CPU lately, as a
            multiple of ``cpu_weight``: a session that steps runs before those that
            burn CPU (``_fairness``; never below ``cpu_weight``). None: off.
        pids: processes and threads of the session together.
        disk_bytes: size of the tmpfs holding the session's ``work/``, ``tmp/`` and (under
            bubblewrap) ``/dev/shm``: one budget for all it can write.
    """

    memory_bytes: int | None = 2 * GiB
    cpus: float | None = 1.0
    cpu_weight: int | None = 100
    cpu_boost: int | None = 10
    pids: int | None = 512
    disk_bytes: int | None = 1 * GiB

    @property
    def any(self) -> bool:
        """Whether any limit is set (else no cgroup and no tmpfs are made)."""
        return any(getattr(self, name) is not None for name in _SESSION_FIELDS)

    @property
    def needs_cgroup(self) -> bool:
        limits = (self.memory_bytes, self.cpus, self.cpu_weight, self.cpu_boost, self.pids)
        return any(v is not None for v in limits)

    @classmethod
    def off(cls) -> SessionLimits:
        return cls(memory_bytes=None, cpus=None, cpu_weight=None, cpu_boost=None, pids=None, disk_bytes=None)

    @classmethod
    def parse(cls, text: str) -> SessionLimits:
        """``"memory=512M,cpus=0.5,cpu_weight=100,cpu_boost=10,pids=128,disk=256M"`` (any subset;
        the rest keep their defaults; ``none`` for one: no limit) or ``"off"``."""
        text = text.strip()
        if text.lower() in ("off", "none", "0"):
            return cls.off()
        keys = {
            "memory": "memory_bytes", "cpus": "cpus", "cpu_weight": "cpu_weight",
            "cpu_boost": "cpu_boost", "pids": "pids", "disk": "disk_bytes",
        }
        changes: dict[str, Any] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, _, value = item.partition("=")
            name = keys.get(key.strip().lower())
            try:
                if name is None or not value:
                    raise ValueError(item)
                value = value.strip()
                if value.lower() == "none":
                    changes[name] = None
                elif name == "cpus":
                    changes[name] = float(value)
                elif name in ("memory_bytes", "disk_bytes"):
                    changes[name] = _size(value)
                else:
                    changes[name] = int(value)
                    if name == "cpu_boost" and changes[name] < 1:
                        raise ValueError(item)
            except ValueError:
                raise SandboxError(
                    f"session limits: cannot read {item!r}; write e.g. "
                    "'memory=512M,cpus=0.5,cpu_weight=100,pids=128,disk=256M' or 'off'"
                ) from None
        return replace(cls(), **changes)

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _SESSION_FIELDS}


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """How to contain a sandbox's processes.

    Args:
        level: what to ask for (see ``SandboxLevel``).
        limits: rlimits and the default wall clock of ``Sandbox.run``.
        network: allow network access (only bubblewrap can take it away).
        root_dir: where each sandbox gets its private directory (``work/``, ``tmp/``);
            default ``$TMPDIR/openenv-sandbox``.
        ro_paths: host paths to show read-only inside, at the same path (an
            interpreter prefix, a task's files); ``/usr`` and ``/etc`` always are.
        env: variables every process gets (on top of a small clean base).
        seccomp: without bubblewrap (and without ``network``), take the network away
            with a seccomp filter (``socket()`` only for ``AF_UNIX``).
        uid_base: first uid handed to sandboxes when the server runs as root.
        uid_count: how many such uids (one per live sandbox, across processes).
        session_limits: limits on each sandbox's whole process tree (cgroups, a
            tmpfs); ``OPENENV_SANDBOX_LIMITS`` sets them in ``from_env``.
    """

    level: SandboxLevel = SandboxLevel.AUTO
    limits: Limits = field(default_factory=Limits)
    network: bool = False
    root_dir: str | None = None
    ro_paths: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    seccomp: bool = True
    uid_base: int = 190_000
    uid_count: int = 4096
    session_limits: SessionLimits = field(default_factory=SessionLimits)

    def __post_init__(self) -> None:
        if not isinstance(self.level, SandboxLevel):
            object.__setattr__(self, "level", parse_level(self.level))
        for path in self.ro_paths:
            if not os.path.isabs(path):
                raise SandboxError(f"ro_paths entries must be absolute paths, not {path!r}")

    @classmethod
    def from_env(cls, **overrides: Any) -> SandboxConfig:
        """Defaults, then ``OPENENV_SANDBOX`` (the level), ``OPENENV_SANDBOX_LIMITS``
        (the session limits, as ``SessionLimits.parse`` reads them) and
        ``OPENENV_SANDBOX_UID_BASE`` (``uid_base``), then ``overrides``.

        A server in a container leases its uids apart from the host's (the coding image
        sets ``OPENENV_SANDBOX_UID_BASE``): the host sees a container's processes, so a
        server of ours on the host that leased the same uid would take a container
        worker's processes for a crashed server's leftovers and kill them.

        ``OPENENV_SANDBOX`` is the user's own setting, read only here; nothing in openenv
        sets it. ``openenv serve --sandbox LEVEL`` gives the env its ``sandbox`` argument
        instead (``env_kwargs``), which the envs that run commands pass as ``level=``.
        """
        config = cls()
        level = os.environ.get("OPENENV_SANDBOX")
        if level:
            config = replace(config, level=parse_level(level))
        limits = os.environ.get("OPENENV_SANDBOX_LIMITS")
        if limits:
            config = replace(config, session_limits=SessionLimits.parse(limits))
        uid_base = os.environ.get("OPENENV_SANDBOX_UID_BASE")
        if uid_base:
            config = replace(config, uid_base=_uid_base(uid_base))
        return replace(config, **overrides) if overrides else config

    def with_limits(self, **changes: Any) -> SandboxConfig:
        """A copy with some limits changed: ``config.with_limits(cpu_s=5)``."""
        return replace(self, limits=replace(self.limits, **changes))

    def with_session_limits(self, **changes: Any) -> SandboxConfig:
        """A copy with some session limits changed: ``config.with_session_limits(pids=64)``."""
        return replace(self, session_limits=replace(self.session_limits, **changes))


def _uid_base(value: str) -> int:
    """``OPENENV_SANDBOX_UID_BASE``: a uid above the system's (1000 or more)."""
    try:
        base = int(value.strip())
    except ValueError:
        base = -1
    if base < 1000:
        raise SandboxError(f"OPENENV_SANDBOX_UID_BASE must be a whole number of 1000 or more, not {value!r}")
    return base


def parse_level(value: object) -> SandboxLevel:
    """``"strict"``/``"auto"``/``"none"`` (any case) -> ``SandboxLevel``; else ``SandboxError``."""
    try:
        return SandboxLevel(str(value).strip().lower())
    except ValueError:
        choices = ", ".join(level.value for level in SandboxLevel)
        raise SandboxError(f"sandbox level must be one of {choices}, not {value!r}") from None
