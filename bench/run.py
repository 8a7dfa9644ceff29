"""Run every benchmark in one go and print markdown tables.

    .venv/bin/python bench/run.py [--quick] [--out results.json] [--no-upstream]
                                  [--only seq,conc,workers,batch,mem,cold]

Baselines are in ``bench/baselines/``: ``raw_ws.py`` is the raw ``websockets`` echo
server; ``upstream_echo.py`` is the same env on upstream openenv 0.10.0's own server,
run under ``.venv-upstream`` (``bash scripts/test.sh`` creates it; without it the
upstream rows are left out with the reason, or use ``--no-upstream``). Nothing is read
from outside the repository. Everything binds to 127.0.0.1; every child process is
stopped by PID at the end (also on Ctrl-C / SIGTERM). Every loop is bounded in
count and in time. Full run ~8-12 min, --quick ~3 min, on a 2-core VM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_cold
import bench_mem
import bench_net
from _upstream_client import UpstreamClient
from _util import (
    Server,
    free_port,
    loadavg,
    machine,
    ours_server,
    raise_nofile,
    raw_server,
    stop_all,
    table,
    upstream_available,
    upstream_server,
)

FULL: dict[str, Any] = {
    "seq_rounds": 16,
    "seq_steps": 1000,
    "seq_warmup": 50,
    "seq_budget_s": 150,
    "conc_ns": [8, 64, 1000],
    "conc_total": 4000,
    "conc_min_each": 10,
    "conc_rounds": 5,
    "conc_rounds_1000": 3,
    "conc_budget_s": 150,
    "workers_ns": [64, 1000],
    "batch_sessions": 64,
    "batch_batches": 50,
    "batch_rounds": 8,
    "block_max_s": 30.0,
    "upstream_client_max_n": 64,
    "mem_marks": [256, 1000],
    "cold_repeats": 5,
    "cold_upstream_repeats": 5,
    "import_repeats": 5,
}
QUICK: dict[str, Any] = {
    **FULL,
    "seq_rounds": 6,
    "seq_steps": 500,
    "seq_budget_s": 30,
    "conc_total": 1600,
    "conc_rounds": 3,
    "conc_rounds_1000": 1,
    "conc_budget_s": 40,
    "workers_ns": [64],
    "batch_batches": 20,
    "batch_rounds": 3,
    "conc_min_each": 4,
    "block_max_s": 15.0,
    "cold_repeats": 5,
    "cold_upstream_repeats": 1,
    "import_repeats": 3,
}
SECTIONS = ("seq", "conc", "workers", "batch", "mem", "cold")
LIVE: list[subprocess.Popen[str]] = []  # client processes of the block running now


def cleanup() -> None:
    for proc in list(LIVE):
        if proc.poll() is None:
            proc.kill()  # by PID (Popen.kill sends SIGKILL to proc.pid)
            proc.wait()
    stop_all()


def on_signal(signum: int, frame: Any) -> None:
    cleanup()
    sys.exit(128 + signum)


def target(ok: bool) -> str:
    return "yes" if ok else "NO"


def headline(res: dict[str, Any]) -> str:
    rows: list[list[str]] = []
    if "seq" in res:
        by = {r["case"]: r for r in res["seq"]["rows"]}
        # the async client's target was raised to 1.0x by the core-seams issue
        for name, short, goal in [
            ("our EnvClient (sync) -> our server", "sync EnvClient", 0.8),
            ("our AsyncEnvClient -> our server", "AsyncEnvClient", 1.0),
        ]:
            r = by[name]
            rows.append(
                [
                    f"1. sequential steps/s, {short} vs raw websockets",
                    f"{r['ratio_vs_base']:.2f}x",
                    f"p50 {r['p50_us']:.0f} us, p99 {r['p99_us']:.0f} us",
                    f">= {goal:.1f}x",
                    target(r["ratio_vs_base"] >= goal),
                    _up(by, "raw websockets client -> upstream 0.10.0 server"),
                ]
            )
    if "conc" in res:
        for n, d in res["conc"].items():
            by = {r["case"]: r for r in d["rows"]}
            r = by["AsyncEnvClient -> our server"]
            # N=1000's target was raised to 0.9x by the core-seams issue
            goal = {"64": 0.7, "1000": 0.9}.get(n)
            rows.append(
                [
                    f"2. aggregate steps/s at N={n} vs raw websockets",
                    f"{r['ratio_vs_base']:.2f}x",
                    f"{r['steps_per_s']:,.0f} steps/s; server CPU/step {r['srv_cpu_vs_base']:.2f}x raw's",
                    "-" if goal is None else f">= {goal:.1f}x",
                    "-" if goal is None else target(r["ratio_vs_base"] >= goal),
                    _up(by, "raw websockets -> upstream 0.10.0"),
                ]
            )
    if "workers" in res:
        for n, d in res["workers"].items():
            rows.append(
                [
                    f"2. --workers 2 / --workers 1 at N={n}",
                    f"{d['gain_p2']:.2f}x (2 client procs)",
                    f"{d['gain_p1']:.2f}x with 1 client proc",
                    "-",
                    "-",
                    "-",
                ]
            )
    if "mem" in res:
        for r in res["mem"]:
            if r["server"].startswith("our"):
                per = r["kib_per_session"].get("1000", float("nan"))
                th = r["threads"]
                rows.append(
                    [
                        f"3. KiB/session, {r['server']}",
                        f"{per:.1f} KiB",
                        f"threads {th['0']} -> {th.get('1000')}",
                        "<= 40 KiB, no thread/session",
                        target(per <= 40 and th.get("1000", 0) - th["0"] < 100),
                        _up_mem(res["mem"]),
                    ]
                )
    if "cold" in res:
        c = res["cold"]
        s = c["spawn_to_reset"]["our server (openenv serve echo)"]["median_s"]
        up = c["spawn_to_reset"].get("upstream 0.10.0 server (create_app, default stack)")
        rows.append(
            [
                "4. cold start: spawn -> first reset",
                f"{s:.2f} s",
                "median of repeats",
                "<= 0.6 s",
                target(s <= 0.6),
                f"{up['median_s']:.2f} s" if up else "-",
            ]
        )
        imp = c["imports"]["ours"]
        for key in ('python -c "import openenv"', 'python -c "from openenv import EnvClient"'):
            r = imp[key]
            rows.append(
                [
                    f"4. {key}",
                    f"{r['net_s']:.3f} s net",
                    f"{r['median_s']:.3f} s raw; CPU {r['net_cpu_s']:.3f} s net",
                    "<= 0.3 s",
                    target(r["net_s"] <= 0.3),
                    _up_imp(c),
                ]
            )
    if "batch" in res:
        by = {r["case"]: r for r in res["batch"]["rows"]}
        for name, r in by.items():
            if "step_batch" in name:
                rows.append(
                    [
                        f"5. {name} / 64 connections",
                        f"{r['ratio_vs_base']:.2f}x",
                        f"{r['steps_per_s']:,.0f} steps/s",
                        "-",
                        "-",
                        "-",
                    ]
                )
    return table(["figure", "ours", "detail", "target", "met", "upstream 0.10.0 (same run)"], rows)


def _up(by: dict[str, Any], name: str) -> str:
    return f"{by[name]['ratio_vs_base']:.2f}x (raw client)" if name in by else "-"


def _up_mem(mem: list[dict[str, Any]]) -> str:
    up = [r for r in mem if r["server"].startswith("upstream")]
    return f"{up[0]['kib_per_session'].get('1000', float('nan')):.1f} KiB" if up else "-"


def _up_imp(cold: dict[str, Any]) -> str:
    up = cold["imports"].get("upstream", {}).get("upstream: from openenv.core.env_client import EnvClient")
    return f"{up['net_s']:.2f} s net (env_client)" if up else "-"


def render(res: dict[str, Any]) -> str:
    """The markdown that a run prints: its title line, the headline and every section's
    table (``bench/render.py`` writes the same from a stored ``--out`` file)."""
    info = res["machine"]
    parts = [
        f"# Results ({info['mode']} run, {res['elapsed_s']:.0f} s, {info['date']}, load average "
        f"{info['loadavg_at_start']} at start, {info['loadavg_at_end']} at end)",
        headline(res),
    ]
    if "seq" in res:
        parts.append(bench_net.seq_table(res["seq"]))
    if "conc" in res:
        parts.append(bench_net.conc_table(res["conc"]))
    if "workers" in res:
        parts.append(bench_net.workers_table(res["workers"]))
        shares = {n: round(d["w2_busiest_worker_cpu_share"], 2) for n, d in res["workers"].items()}
        parts.append(f"--workers 2: CPU share of the busiest server process (0.5 = even), by N: {shares}")
    if "batch" in res:
        parts.append(bench_net.batch_table(res["batch"]))
    if "mem" in res:
        parts.append(bench_mem.mem_table(res["mem"], res["config"]["mem_marks"]))
    if "cold" in res:
        parts.append(bench_cold.cold_table(res["cold"]))
    return "\n" + "\n\n".join(parts) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer and shorter blocks (~3 min)")
    ap.add_argument("--out", help="write all results as JSON to this file")
    ap.add_argument("--no-upstream", action="store_true", help="skip upstream 0.10.0 even if installed")
    ap.add_argument(
        "--only", default=",".join(SECTIONS), help="comma-separated subset of " + ",".join(SECTIONS)
    )
    ap.add_argument("--rounds", type=int, help="at most this many rounds per block (a smoke run: 1)")
    a = ap.parse_args()
    only = set(a.only.split(","))
    if unknown := only - set(SECTIONS):
        ap.error(f"unknown sections: {sorted(unknown)}")
    cfg = dict(QUICK if a.quick else FULL)
    if a.rounds:
        for key in [k for k in cfg if k.endswith(("_rounds", "_rounds_1000", "_repeats"))]:
            cfg[key] = min(cfg[key], a.rounds)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    nofile = raise_nofile()
    why_not = "--no-upstream given" if a.no_upstream else upstream_available()
    with_up = why_not is None
    if why_not is not None:
        print(f"run: the upstream baseline is left out: {why_not}", file=sys.stderr, flush=True)
    info = {
        **machine(),
        "command": " ".join([os.path.relpath(sys.executable), *sys.argv]),
        "mode": "quick" if a.quick else "full",
        "nofile": nofile,
        "upstream": "openenv 0.10.0" if with_up else why_not,
    }
    print(f"machine: {json.dumps(info)}", flush=True)
    res: dict[str, Any] = {"machine": info, "config": cfg}
    t_start = time.monotonic()
    try:
        if "cold" in only:
            print(f"== cold start and imports (t={time.monotonic() - t_start:.0f} s)", flush=True)
            res["cold"] = bench_cold.measure(
                cfg["cold_repeats"], cfg["cold_upstream_repeats"], cfg["import_repeats"], with_up
            )
        srv: dict[str, Server] = {}
        upc: UpstreamClient | None = None
        if only & {"seq", "conc", "workers", "batch", "cold"}:
            # Started now so that their boot (upstream: ~7 s of CPU) overlaps the memory
            # section, which reads RSS only; nothing timed runs until all are ready.
            srv = {
                "raw": raw_server(free_port()),
                "ours": ours_server(free_port()),
                "ours2": ours_server(free_port(), workers=2, name="ours-w2"),
            }
            if with_up:
                srv["upstream"] = upstream_server(free_port())
            for s in srv.values():
                s.start()
            if with_up and only & {"seq", "conc"}:
                upc = UpstreamClient()
        if "mem" in only:
            print(f"== memory per idle session (t={time.monotonic() - t_start:.0f} s)", flush=True)
            res["mem"] = bench_mem.measure(cfg["mem_marks"], with_up)
        if srv:
            for s in srv.values():
                s.wait_ready(timeout_s=120)
            if upc is not None:
                upc.wait_ready()
            print(
                "== servers up: " + ", ".join(f"{k} pid {s.pid} port {s.port}" for k, s in srv.items()),
                flush=True,
            )
            if "cold" in only:
                res["cold"]["client_process"] = bench_cold.client_process_seconds(
                    srv["ours"].url, cfg["cold_repeats"]
                )
            if "seq" in only:
                print(f"== sequential (t={time.monotonic() - t_start:.0f} s)", flush=True)
                res["seq"] = bench_net.seq(srv, cfg, upc)
            if "conc" in only:
                print(f"== concurrency (t={time.monotonic() - t_start:.0f} s)", flush=True)
                res["conc"] = bench_net.conc(srv, cfg, LIVE, upc)
            if "workers" in only:
                print(f"== workers (t={time.monotonic() - t_start:.0f} s)", flush=True)
                res["workers"] = bench_net.workers(srv, cfg, LIVE)
            if "batch" in only:
                print(f"== batch (t={time.monotonic() - t_start:.0f} s)", flush=True)
                res["batch"] = bench_net.batch(srv, cfg)
    finally:
        cleanup()
    res["elapsed_s"] = time.monotonic() - t_start
    info["loadavg_at_end"] = loadavg()
    print(render(res))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1, default=str)
        print(f"JSON written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
