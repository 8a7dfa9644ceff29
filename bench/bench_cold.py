"""Cold start and import time.

* spawn -> first successful reset: the server process is spawned and a raw websockets
  client sends a reset every 10 ms until one is answered; repeated, median reported.
* imports: ``python -c "..."`` wall time, median over repeats, minus ``python -c pass``
  of the same interpreter (the three commands alternate, so they share the noise).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from _util import (
    UPSTREAM_PY,
    Server,
    fmt,
    free_port,
    median,
    ours_server,
    proc_status,
    raw_server,
    table,
    upstream_server,
)


def spawn_to_reset(make: Callable[[int], Server], repeats: int) -> dict[str, Any]:
    times, rss = [], []
    for _ in range(repeats):
        srv = make(free_port()).start()
        try:
            times.append(srv.wait_ready(timeout_s=90.0, interval_s=0.01))
            rss.append(proc_status(srv.pid)["VmRSS"])
        finally:
            srv.stop()
    return {"median_s": median(times), "all_s": times, "rss_kib": median(rss)}


def _run(argv: Sequence[str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+sys) of one child process."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{argv} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _wall(argv: Sequence[str], cwd: str) -> float:
    return _run(argv, cwd)[0]


def import_times(python: str, snippets: dict[str, str], repeats: int, label: str) -> dict[str, Any]:
    """Median wall (and CPU) time of ``python -c SNIPPET``, and net of ``python -c pass``.

    Run from ``/`` so that the working directory adds nothing to ``sys.path``. CPU time
    is reported too: it is less sensitive than wall time to other tenants' load."""
    cases = {f"{label}: python -c pass": "pass", **snippets}
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    _run([python, "-c", "pass"], "/")  # warm the page cache once
    for _ in range(repeats):
        for name, code in cases.items():
            runs[name].append(_run([python, "-c", code], "/"))
    base = runs[f"{label}: python -c pass"]
    wall0, cpu0 = median(w for w, _ in base), median(c for _, c in base)
    out = {}
    for name, v in runs.items():
        wall, cpu = median(w for w, _ in v), median(c for _, c in v)
        out[name] = {
            "median_s": wall,
            "net_s": wall - wall0,
            "cpu_s": cpu,
            "net_cpu_s": cpu - cpu0,
            "all_s": [w for w, _ in v],
            "is_base": v is base,
        }
    return out


def measure(repeats: int, upstream_repeats: int, import_repeats: int, with_upstream: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"spawn_to_reset": {}, "imports": {}}
    servers: dict[str, tuple[Callable[[int], Server], int]] = {
        "our server (openenv serve echo)": (lambda p: ours_server(p, max_sessions=1024), repeats),
        "raw websockets server": (raw_server, repeats),
    }
    if with_upstream:
        servers["upstream 0.10.0 server (create_app, default stack)"] = (upstream_server, upstream_repeats)
    for name, (make, n) in servers.items():
        out["spawn_to_reset"][name] = r = spawn_to_reset(make, n)
        print(f"  cold {name}: {r['all_s']}", flush=True)
    ours = {
        'python -c "import openenv"': "import openenv",
        'python -c "from openenv import EnvClient"': "from openenv import EnvClient",
        "from openenv import EnvClient; from echo_env import MODELS": (
            "from openenv import EnvClient; from echo_env import MODELS"
        ),
        "dependency floor: import orjson, msgpack, websockets.client; one pydantic model": (
            "import orjson, msgpack, websockets.client\nfrom pydantic import BaseModel\n"
            "class A(BaseModel):\n    x: int = 0"
        ),
    }
    out["imports"]["ours"] = import_times(sys.executable, ours, import_repeats, "ours")
    if with_upstream:
        code = "from openenv.core.env_client import EnvClient"
        up = {f"upstream: {code}": code}
        n = min(upstream_repeats, import_repeats)
        out["imports"]["upstream"] = import_times(str(UPSTREAM_PY), up, n, "upstream venv")
    for who, d in out["imports"].items():
        print(f"  imports {who}: " + ", ".join(f"{k}={v['median_s']:.3f}s" for k, v in d.items()), flush=True)
    return out


def client_process_seconds(url: str, repeats: int) -> dict[str, Any]:
    """A whole client process: import EnvClient + models, connect, reset, close."""
    code = (
        "import sys; from openenv import EnvClient; from echo_env import MODELS\n"
        "with EnvClient(sys.argv[1], MODELS) as env: env.reset()"
    )
    walls = [_wall([sys.executable, "-c", code, url], "/") for _ in range(repeats)]
    return {"median_s": median(walls), "all_s": walls}


def cold_table(out: dict[str, Any]) -> str:
    rows = [
        [
            f"{name}: spawn -> first successful reset",
            f"{r['median_s']:.3f}",
            "-",
            "-",
            ", ".join(f"{x:.2f}" for x in r["all_s"]),
            fmt(r["rss_kib"]),
        ]
        for name, r in out["spawn_to_reset"].items()
    ]
    for d in out["imports"].values():
        for name, r in d.items():
            net = "-" if r["is_base"] else f"{r['net_s']:.3f}"
            cpu = f"{r['cpu_s']:.3f}" if r["is_base"] else f"{r['cpu_s']:.3f} (net {r['net_cpu_s']:.3f})"
            reps = ", ".join(f"{x:.2f}" for x in r["all_s"])
            rows.append([name, f"{r['median_s']:.3f}", net, cpu, reps, "-"])
    if "client_process" in out:
        r = out["client_process"]
        what = "client process: import + connect + reset + close (our EnvClient)"
        reps = ", ".join(f"{x:.2f}" for x in r["all_s"])
        rows.append([what, f"{r['median_s']:.3f}", "-", "-", reps, "-"])
    return table(
        [
            "what",
            "median wall s",
            "wall net of `python -c pass` s",
            "median CPU s (user+sys)",
            "all repeats, wall s",
            "RSS at ready KiB",
        ],
        rows,
    )
