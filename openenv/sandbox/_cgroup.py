"""One cgroup per sandbox: the whole process tree's memory, CPU and process count.

The kernel enforces the limits on every process of the session together, however
many there are. Sessions' cgroups are made under the server's own cgroup (in a
child named ``openenv-sandbox``), so whatever bounds the server bounds them too.

- cgroup v2 (one unified hierarchy): ``memory.max`` (and ``memory.swap.max`` 0),
  ``cpu.weight``, ``cpu.max``, ``pids.max``. The controllers must be enabled for
  the server's cgroup's children, which the kernel refuses while that cgroup itself
  holds processes (unless it is the root): run the server in a delegated cgroup,
  or name one with ``OPENENV_SANDBOX_CGROUP``.
- cgroup v1 (one hierarchy per controller, under ``/sys/fs/cgroup/<controller>``):
  ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``, so no swap
  either), ``cpu.shares``, ``cpu.cfs_quota_us``, ``pids.max``.

Where the cpuset controller is there too, a session with a ``cpus`` limit is also
pinned to that many whole cores, the least used (``_cpuset``).

Either way the OOM killer, when the tree goes past its memory, picks a process of
that tree only. A process joins before it ``exec``s its command (``stage_prefix``
in ``_sandbox``), so all it starts are in too.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ._config import SessionLimits
from ._cpuset import CorePicker, parse_cpu_list, prepare_parent
from ._fairness import Counter

log = logging.getLogger("openenv.sandbox")

#: The controllers a session's cgroup needs; cpuacct (v1) is joined where mounted.
NEEDED = ("memory", "cpu", "pids")
PARENT_NAME = "openenv-sandbox"
#: How long removing a cgroup waits for its processes to finish exiting (then it is
#: retried in the background).
RMDIR_WAIT_S = 2.0
_PERIOD_US = 100_000


@dataclass(frozen=True, slots=True)
class CgroupHost:
    """Where sessions' cgroups go: ``version`` 1 or 2, and for each controller the
    parent directory (v2: one directory for all)."""

    version: int
    parents: dict[str, Path]
    #: Where sessions' cpusets go (v1: its own hierarchy; v2: the same directory), and
    #: the cores to pin them to; None where the cpuset controller is not available.
    cpuset: Path | None = None
    picker: CorePicker | None = None

    @property
    def label(self) -> str:
        return f"cgroup-v{self.version}"

    def dirs(self, name: str) -> list[Path]:
        """The session's directories, one per distinct hierarchy."""
        return [parent / name for parent in dict.fromkeys(self.parents.values())]


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount point, mount root, super options) of each cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((tail[0], fields[4], fields[3], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """controller -> this process's cgroup path (v2: key ``""``)."""
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _under(mount: str, root: str, own: str) -> Path:
    rel = own[len(root) :] if root != "/" and own.startswith(root) else own
    return Path(mount) / rel.lstrip("/")


def _enable(cgroup: Path, controllers: tuple[str, ...]) -> None:
    have = (cgroup / "cgroup.subtree_control").read_text().split()
    missing = [c for c in controllers if c not in have]
    if missing:
        (cgroup / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _setup_v2(mount: str, root: str, own: str) -> CgroupHost:
    override = os.environ.get("OPENENV_SANDBOX_CGROUP")
    base = Path(override) if override else _under(mount, root, own)
    available = (base / "cgroup.controllers").read_text().split()
    missing = [c for c in NEEDED if c not in available]
    if missing:
        raise OSError(f"controllers {missing} are not delegated to {base}")
    try:
        _enable(base, NEEDED)
    except OSError as exc:
        wanted = "/".join(NEEDED)
        raise OSError(f"cannot enable {wanted} for the children of {base} ({exc.strerror})") from exc
    parent = base / PARENT_NAME
    parent.mkdir(exist_ok=True)
    _enable(parent, NEEDED)
    picker = None
    if "cpuset" in available:
        try:
            _enable(base, ("cpuset",))
            _enable(parent, ("cpuset",))
            picker = _picker((parent / "cpuset.cpus.effective").read_text())
        except OSError:
            picker = None
    return CgroupHost(2, {c: parent for c in NEEDED}, parent if picker else None, picker)


def _picker(cpu_list: str) -> CorePicker | None:
    """The cores sessions may be pinned to: the cgroup's, that this process may use."""
    cores = [c for c in parse_cpu_list(cpu_list) if c in os.sched_getaffinity(0)]
    return CorePicker(cores) if len(cores) > 1 else None


def _setup_v1(v1: dict[str, tuple[str, str]], own: dict[str, str]) -> CgroupHost:
    parents = {}
    for controller in (*NEEDED, "cpuacct"):
        if controller not in v1:
            continue
        mount, root = v1[controller]
        parent = _under(mount, root, own.get(controller, "/")) / PARENT_NAME
        parent.mkdir(exist_ok=True)
        parents[controller] = parent
    cpuset, picker = None, None
    if "cpuset" in v1:
        mount, root = v1["cpuset"]
        try:
            cpuset = _under(mount, root, own.get("cpuset", "/")) / PARENT_NAME
            cpuset.mkdir(exist_ok=True)
            prepare_parent(cpuset)
            picker = _picker((cpuset / "cpuset.cpus").read_text())
        except OSError:
            picker = None
    return CgroupHost(1, parents, cpuset if picker else None, picker)


@functools.cache
def cgroup_host() -> tuple[CgroupHost | None, str]:
    """The cgroups this process can give its sandboxes, or None and why not.
    Probed (and the parent directories made) once per process."""
    try:
        mounts, own = _mounts(), _own_paths()
        v1: dict[str, tuple[str, str]] = {}
        for fstype, point, root, opts in mounts:
            if fstype == "cgroup":
                for controller in opts & {*NEEDED, "cpuacct", "cpuset"}:
                    v1.setdefault(controller, (point, root))
        if all(c in v1 for c in NEEDED):
            return _setup_v1(v1, own), ""
        unified = [(point, root) for fstype, point, root, _ in mounts if fstype == "cgroup2"]
        if unified and "" in own:
            return _setup_v2(*unified[0], own[""]), ""
        missing = [c for c in NEEDED if c not in v1]
        return None, f"no cgroup hierarchy with the {'/'.join(missing)} controllers is mounted"
    except OSError as exc:
        why = exc.strerror if exc.filename and exc.strerror else str(exc)
        where = f" ({exc.filename})" if exc.filename else ""
        return None, f"no write access to cgroups: {why}{where}"


class SessionCgroup:
    """The cgroup(s) of one sandbox: made with its limits, killed and removed at close."""

    def __init__(self, host: CgroupHost, name: str, limits: SessionLimits) -> None:
        self.host = host
        self.name = name
        self.dirs = host.dirs(name)
        self.cores: list[int] = []
        try:
            for path in self.dirs:
                path.mkdir()
            self._apply(limits)
            self._pin(limits)
        except OSError:
            self.remove()
            raise

    def _pin(self, limits: SessionLimits) -> None:
        """Pin to ``ceil(cpus)`` of the least used cores (see ``_cpuset``)."""
        if self.host.picker is None or self.host.cpuset is None:
            return
        self.cores = self.host.picker.take(limits.cpus)
        if not self.cores:
            return
        where = self.host.cpuset / self.name
        if self.host.version == 1:
            where.mkdir()
            self.dirs.append(where)
            (where / "cpuset.mems").write_text((self.host.cpuset / "cpuset.mems").read_text().strip())
        (where / "cpuset.cpus").write_text(",".join(map(str, self.cores)))

    def repin(self) -> None:
        """Move to the least used cores now (a pooled sandbox handed to a session: the
        cores it was given when it was made may have filled since). Its processes move
        with it; nothing happens when it is not pinned."""
        picker = self.host.picker
        if not self.cores or picker is None or self.host.cpuset is None:
            return
        count = len(self.cores)
        picker.give(self.cores)
        chosen = picker.take_exactly(count)
        try:
            (self.host.cpuset / self.name / "cpuset.cpus").write_text(",".join(map(str, chosen)))
        except OSError:  # keep the old pins (and their count)
            picker.give(chosen)
            picker.hold(self.cores)
            return
        self.cores = chosen

    @classmethod
    def attach(cls, host: CgroupHost, name: str) -> SessionCgroup:
        """The existing session cgroup ``name`` (made by another process), to read its
        counters; nothing is made or changed."""
        self = cls.__new__(cls)
        self.host, self.name, self.dirs, self.cores = host, name, host.dirs(name), []
        return self

    def _path(self, controller: str) -> Path:
        return self.host.parents[controller] / self.name

    def _apply(self, limits: SessionLimits) -> None:
        mem, cpu, pids = self._path("memory"), self._path("cpu"), self._path("pids")
        quota = int(limits.cpus * _PERIOD_US) if limits.cpus else None
        if self.host.version == 2:
            if limits.memory_bytes is not None:
                (mem / "memory.max").write_text(str(limits.memory_bytes))
                _try_write(mem / "memory.swap.max", "0")
            if limits.cpu_weight is not None:
                (cpu / "cpu.weight").write_text(weight_value(2, limits.cpu_weight))
            if quota is not None:
                (cpu / "cpu.max").write_text(f"{quota} {_PERIOD_US}")
        else:
            if limits.memory_bytes is not None:
                (mem / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
                _try_write(mem / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
            if limits.cpu_weight is not None:  # cgroup v2's weight 100 is v1's 1024 shares
                (cpu / "cpu.shares").write_text(weight_value(1, limits.cpu_weight))
            if quota is not None:
                (cpu / "cpu.cfs_period_us").write_text(str(_PERIOD_US))
                (cpu / "cpu.cfs_quota_us").write_text(str(quota))
        if limits.pids is not None:
            (pids / "pids.max").write_text(str(limits.pids))

    def fairness(self, limits: SessionLimits) -> tuple[Counter, str, str, str] | str:
        """What the CPU fairness monitor needs (``_fairness``): the CPU counter, the
        weight file, the base and the boosted weight as written there; or why it
        cannot work here."""
        base = limits.cpu_weight if limits.cpu_weight is not None else 100
        boosted = base * (limits.cpu_boost or 1)
        cpu = self._path("cpu")
        if self.host.version == 2:
            counter = Counter(str(cpu / "cpu.stat"), "usage_usec")
            weight_file = str(cpu / "cpu.weight")
        elif "cpuacct" in self.host.parents:
            counter = Counter(str(self._path("cpuacct") / "cpuacct.usage"))
            weight_file = str(cpu / "cpu.shares")
        else:
            return "cgroup v1 without the cpuacct controller: no per-session CPU counter"
        v = self.host.version
        return counter, weight_file, weight_value(v, base), weight_value(v, boosted)

    @property
    def procs_files(self) -> list[str]:
        """Where a process writes its pid to join (every hierarchy), the CPU
        controller's last. Each join takes, for writing, the lock that every fork,
        thread start and exit on the host takes for reading; a joiner starved while it
        holds it stalls them all (the server's event loop for 169 ms, starting a
        thread). Once in the session's CPU group it competes with every sandbox for
        one share, so it joins that one when it has no other join to make."""
        cpu = self.host.parents.get("cpu")
        dirs = sorted(self.dirs, key=lambda path: path.parent == cpu)
        return [str(path / "cgroup.procs") for path in dirs]

    def pids(self) -> list[int]:
        return pids_in(self.dirs[0])

    def kill(self) -> None:
        """SIGKILL every process in the cgroup, until none is left (bounded). Its CPU
        weight is raised meanwhile: a killed process must still run to exit, and one
        starved in a busy group keeps its cgroups busy (rmdir fails) and, mid-exit,
        holds a lock every fork and thread start on the host waits for."""
        weight = self._path("cpu") / ("cpu.weight" if self.host.version == 2 else "cpu.shares")
        try:
            before = weight.read_text().strip()
        except OSError:
            before = ""
        if before:
            _try_write(weight, weight_value(self.host.version, 10_000))
        try:
            kill_tree(self.dirs[0])
        finally:
            if before:
                _try_write(weight, before)

    def remove(self) -> None:
        """Kill what is left in every directory, then remove them (each try kills what
        has joined since: see ``_rmdir``), within ``RMDIR_WAIT_S`` in all. Idempotent."""
        cores, self.cores = getattr(self, "cores", []), []
        try:
            dirs = [path for path in self.dirs if path.exists()]
            for path in dirs:
                kill_tree(path)
            deadline = time.monotonic() + RMDIR_WAIT_S
            for path in dirs:
                _rmdir(path, deadline)
        finally:  # the cores are free even when a directory could not be removed
            if cores and self.host.picker is not None:
                self.host.picker.give(cores)

    def stats(self) -> dict[str, int]:
        """The kernel's own counters: memory peak and limit hits, CPU use and
        throttling, process-limit hits (names as in the v1/v2 files)."""
        out: dict[str, int] = {}
        mem, cpu, pids = self._path("memory"), self._path("cpu"), self._path("pids")
        if self.host.version == 2:
            out["memory_peak"] = _read_int(mem / "memory.peak")
            out.update({f"memory_{k}": v for k, v in _read_kv(mem / "memory.events").items()})
            out.update({f"cpu_{k}": v for k, v in _read_kv(cpu / "cpu.stat").items()})
            out["pids_max_hits"] = _read_kv(pids / "pids.events").get("max", -1)
        else:
            out["memory_peak"] = _read_int(mem / "memory.max_usage_in_bytes")
            out["memory_failcnt"] = _read_int(mem / "memory.failcnt")
            out["memory_oom_kill"] = _read_kv(mem / "memory.oom_control").get("oom_kill", -1)
            out.update({f"cpu_{k}": v for k, v in _read_kv(cpu / "cpu.stat").items()})
            if "cpuacct" in self.host.parents:
                out["cpu_usage_usec"] = _read_int(self._path("cpuacct") / "cpuacct.usage") // 1000
            out["pids_max_hits"] = _read_kv(pids / "pids.events").get("max", -1)
        return out


def weight_value(version: int, weight: int) -> str:
    """A v2-scale weight (1-10000, 100 the default) as written to ``cpu.weight`` (v2)
    or ``cpu.shares`` (v1: weight 100 is 1024 shares; 2-262144)."""
    if version == 2:
        return str(min(10_000, max(1, weight)))
    return str(min(262_144, max(2, weight * 1024 // 100)))


def pids_in(cgroup: Path) -> list[int]:
    try:
        return [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def kill_tree(cgroup: Path) -> None:
    """SIGKILL every process of ``cgroup``: ``cgroup.kill`` (v2) where there is one,
    else pid by pid, again while any are left (a fork races the first pass)."""
    if (cgroup / "cgroup.kill").exists():
        _try_write(cgroup / "cgroup.kill", "1")
    for _ in range(50):
        pids = pids_in(cgroup)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def sweep(host: CgroupHost, prefix: str) -> None:
    """Remove the cgroups named ``prefix*`` that a crashed server left (killing their
    processes first)."""
    for parent in dict.fromkeys([*host.parents.values(), *([host.cpuset] if host.cpuset else [])]):
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                if entry.is_dir() and entry.name.startswith(prefix):
                    kill_tree(Path(entry.path))
                    _rmdir(Path(entry.path))


def _rmdir(path: Path, deadline: float | None = None) -> None:
    """Remove a cgroup directory, busy while a process is in it: each failed try kills
    what is there (a process that joined after the kill: a sandbox's first step, started
    as the sandbox closed, joins its cgroups one by one and then runs its command) and
    the next waits for it to finish exiting (slow on a loaded host). Past ``deadline``
    (default ``RMDIR_WAIT_S`` from now) the directory is logged with what holds it and
    handed to a thread that goes on the same way for a minute more."""
    if deadline is None:
        deadline = time.monotonic() + RMDIR_WAIT_S
    while not _try_rmdir(path):
        if time.monotonic() > deadline:
            log.warning(
                "cgroup %s is still busy %g s after its removal began (%s); retried in the background",
                path,
                RMDIR_WAIT_S,
                _holders(path),
            )
            _LATER.add(path)
            return
        kill_tree(path)
        time.sleep(0.005)


def _holders(path: Path) -> str:
    """What keeps ``path`` busy: its processes (pid, state, kernel wait, name) or its
    child cgroups."""
    about = []
    for pid in pids_in(path):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            state = stat[stat.rindex(")") + 2 :].split()[0]
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
        except (OSError, ValueError, IndexError):
            state, name = "?", "?"
        try:
            wchan = Path(f"/proc/{pid}/wchan").read_text().strip() or "-"
        except OSError:
            wchan = "?"
        about.append(f"pid {pid} {name} state {state} in {wchan}")
    with contextlib.suppress(OSError):
        about += [f"child cgroup {entry.name}" for entry in os.scandir(path) if entry.is_dir()]
    return ", ".join(about) or "nothing left in it now"


def _try_rmdir(path: Path) -> bool:
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


class _Later:
    """Cgroup directories still busy after ``_rmdir``'s retries, retried by a thread
    of their own every 0.25 s for ``keep_s`` (killing what is in them each time)."""

    def __init__(self, keep_s: float = 60.0) -> None:
        self.keep_s = keep_s
        self._lock = threading.Lock()
        self._paths: dict[Path, float] = {}
        self._thread: threading.Thread | None = None

    def add(self, path: Path) -> None:
        with self._lock:
            self._paths[path] = time.monotonic() + self.keep_s
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="openenv-cgroup-rmdir", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(0.25)
            with self._lock:
                paths = list(self._paths.items())
            now = time.monotonic()
            for path, until in paths:
                gone = _try_rmdir(path)
                if not gone:
                    kill_tree(path)
                    if now > until:
                        log.error("cgroup %s could not be removed: %s", path, _holders(path))
                if gone or now > until:
                    with self._lock:
                        self._paths.pop(path, None)
            with self._lock:
                if not self._paths:
                    self._thread = None
                    return


_LATER = _Later()


def _try_write(path: Path, value: str) -> None:
    with contextlib.suppress(OSError):
        path.write_text(value)


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return -1


def _read_kv(path: Path) -> dict[str, int]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    pairs = (line.split() for line in lines)
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].lstrip("-").isdigit()}
