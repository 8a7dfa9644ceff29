"""Shared helpers: servers as child processes (stopped by PID), /proc readers, stats.

Every server binds to 127.0.0.1. Every child process started here is recorded in
``CHILDREN`` and stopped by its PID (and its descendants' PIDs) by ``stop_all``,
which ``run.py`` calls on exit, on SIGINT and on SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
#: The baseline servers (raw ``websockets``; upstream 0.10.0's own server), in this repo.
BASELINES = BENCH / "baselines"
UPSTREAM_PY = ROOT / ".venv-upstream" / "bin" / "python"
CLK_TCK = os.sysconf("SC_CLK_TCK")
RESET_FRAME = '{"type":"reset","data":{}}'
STEP_FRAME = '{"type":"step","data":{"message":"hello"}}'
#: Every server child exits by itself after this long, whatever happens to us.
SERVER_MAX_S = 1800

CHILDREN: list[Any] = []  # anything with .name and .stop(): servers, helper clients


def peak_mib(cuda: bool) -> float:
    """This process's peak memory in MiB: the CUDA allocator's peak on a GPU, else max RSS."""
    if cuda:
        import torch

        return float(torch.cuda.max_memory_allocated()) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def raise_nofile(want: int = 16384) -> int:
    """Raise the soft open-files limit (children inherit it); returns the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, want), hard) if hard != resource.RLIM_INFINITY else max(soft, want)
    if target != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


# --- /proc ------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """All live descendant PIDs of ``pid`` (children of every thread, recursively)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except OSError:
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), seconds; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return 0.0
    fields = data[data.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of ``pid`` and each of its descendants."""
    return {p: cpu_seconds(p) for p in [pid, *descendants(pid)]}


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM / RssAnon (KiB) and Threads of one process."""
    out: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "Threads"):
                out[key] = int(value.split()[0])
    return out


# --- servers ----------------------------------------------------------------------


class Server:
    """One server child process on 127.0.0.1; ``url`` is its WebSocket endpoint."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        port: int,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name, self.argv, self.port = name, list(argv), port
        self.cwd = cwd or ROOT
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None
        self.t_spawn = 0.0
        self.url = f"ws://{HOST}:{port}/ws"
        self.base = f"http://{HOST}:{port}"

    def start(self) -> Server:
        # A file, not a pipe: a chatty server (upstream logs every connection) never blocks.
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        CHILDREN.append(self)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def wait_ready(self, timeout_s: float = 90.0, interval_s: float = 0.01) -> float:
        """Probe with a raw websockets reset until one succeeds; seconds since spawn."""
        from websockets.sync.client import connect

        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                self.log.seek(0)
                err = self.log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"{self.name} exited (rc {self.proc.returncode}):\n{err}")
            try:
                with connect(self.url, open_timeout=1.0, compression=None) as ws:
                    ws.send(RESET_FRAME)
                    if json.loads(ws.recv(timeout=2.0)).get("type") == "observation":
                        return time.perf_counter() - self.t_spawn
            except (OSError, TimeoutError, Exception):  # refused / not up yet / handshake
                pass
            time.sleep(interval_s)
        raise TimeoutError(f"{self.name} not ready within {timeout_s} s")

    def stop(self) -> None:
        """SIGTERM the server, then SIGKILL it and any descendant left, each by PID."""
        if self.proc is None:
            return
        kids = descendants(self.proc.pid)
        if self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=8)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
            except ProcessLookupError:
                pass
        for pid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.log.close()
        self.proc = None
        if self in CHILDREN:
            CHILDREN.remove(self)


def stop_all() -> None:
    for child in list(CHILDREN):
        try:
            child.stop()
        except Exception as exc:  # keep stopping the others
            print(f"stopping {child.name} failed: {exc}", file=sys.stderr)


def ours_server(port: int, workers: int = 1, max_sessions: int = 2048, name: str = "ours") -> Server:
    """``openenv serve echo`` (the console script of this venv)."""
    script = Path(sys.executable).parent / "openenv"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "openenv"]
    argv += ["serve", "echo", "--host", HOST, "--port", str(port)]
    argv += ["--workers", str(workers), "--max-sessions", str(max_sessions)]
    # one client (the bench) fills the server: no per-client quota
    env = {"OPENENV_LOG_LEVEL": "warning", "OPENENV_MAX_SESSIONS_PER_CLIENT": "0"}
    return Server(name, argv, port, env=env)


def raw_server(port: int) -> Server:
    """The raw ``websockets`` echo server (``bench/baselines/raw_ws.py``)."""
    argv = [sys.executable, str(BASELINES / "raw_ws.py"), "--port", str(port)]
    argv += ["--max-seconds", str(SERVER_MAX_S)]
    return Server("raw", argv, port, cwd=BASELINES)


UPSTREAM_HINT = "bash scripts/test.sh creates it (pip install openenv==0.10.0 into .venv-upstream)"


def upstream_available() -> str | None:
    """Why upstream cannot run, or None when ``.venv-upstream`` has openenv 0.10.0."""
    if not UPSTREAM_PY.exists():
        return f"{UPSTREAM_PY.relative_to(ROOT)} does not exist; {UPSTREAM_HINT}"
    code = "import importlib.metadata as m; print(m.version('openenv'))"
    try:  # -I and a cwd outside the repo: our own ./openenv must not shadow upstream's
        out = subprocess.run(
            [str(UPSTREAM_PY), "-I", "-c", code], cwd="/", capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run {UPSTREAM_PY}: {exc}"
    return None if out == "0.10.0" else f"{UPSTREAM_PY} has openenv {out or '?'}, not 0.10.0; {UPSTREAM_HINT}"


def upstream_server(port: int, max_envs: int = 1100) -> Server:
    """Upstream openenv 0.10.0's own ``create_app`` serving the same echo env
    (``bench/baselines/upstream_echo.py`` under ``.venv-upstream``)."""
    argv = [
        str(UPSTREAM_PY), str(BASELINES / "upstream_echo.py"), "--port", str(port), "--stack", "default",
        "--max-envs", str(max_envs), "--max-seconds", str(SERVER_MAX_S),
    ]
    return Server("upstream", argv, port, cwd=BASELINES)


# --- stats and output -------------------------------------------------------------


def median(xs: Iterable[float]) -> float:
    vals = [x for x in xs if x == x]
    return statistics.median(vals) if vals else float("nan")


def pct(xs: Sequence[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """Median over blocks of a[i] / b[i] (same block = same minute on the machine)."""
    return median(x / y for x, y in zip(a, b, strict=False) if y)


def spread(xs: Sequence[float]) -> str:
    vals = [x for x in xs if x == x]
    return f"{min(vals):.2f}-{max(vals):.2f}" if vals else "-"


def fmt(v: Any, nd: int = 0) -> str:
    if isinstance(v, float):
        return "-" if v != v else f"{v:,.{nd}f}"
    return "-" if v is None else str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells[1:]]
    return "\n".join(lines)


def loadavg() -> str:
    """1/5/15-minute load averages (other tenants' work shows up here)."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def machine() -> dict[str, Any]:
    from importlib import metadata

    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "kernel": os.uname().release,
        "loadavg_at_start": loadavg(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
        with open("/proc/meminfo") as f:
            info["mem_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    try:  # the code measured: commit, and whether the tree had local changes

        def git(*args: str) -> str:
            cmd = ["git", "-C", str(ROOT), *args]
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()

        info["commit"] = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "openenv", "envs")
        info["openenv_tree"] = "local changes: " + dirty.replace("\n", "; ") if dirty else "clean"
    except (OSError, subprocess.TimeoutExpired):
        pass
    for name in ("websockets", "uvicorn", "starlette", "pydantic", "orjson", "uvloop", "httptools"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            info[name] = metadata.version(name)
    return info
