"""Throughput, paired against a raw ``websockets`` echo server in the same run.

Method (the machine is a noisy 2-core VM): every server is up at once (idle ones cost
nothing); the client runs short blocks A, B, C, ... A, B, C, ... (the order rotates
each round) and a ratio is the MEDIAN over rounds of (case block rate / baseline block
rate from the same round). Absolute rates are medians of blocks.

Sections: ``seq`` (1 client, sequential steps), ``conc`` (N sessions from one asyncio
client process), ``workers`` (``--workers 2`` vs ``1``), ``batch`` (``step_batch`` over
named sessions on one connection vs one connection per session).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from typing import Any

import _clients as C
from _upstream_client import UpstreamClient
from _util import Server, fmt, median, paired_ratio, pct, spread, table

Case = Callable[[], dict[str, Any]]


def run_blocks(
    cases: dict[str, Case], rounds: int, budget_s: float, label: str
) -> dict[str, list[dict[str, Any]]]:
    """Run every case once per round, order rotated per round; stop early past the budget
    (after at least 2 full rounds)."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
    names = list(cases)
    t_end = time.monotonic() + budget_s
    for r in range(rounds):
        if r >= 2 and time.monotonic() > t_end:
            print(f"  [{label}] time budget reached after {r} rounds", flush=True)
            break
        for name in names[r % len(names) :] + names[: r % len(names)]:
            out[name].append(cases[name]())
    return out


def rates(blocks: list[dict[str, Any]]) -> list[float]:
    return [b["steps_per_s"] for b in blocks]


def per_block(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[float]:
    return [x / y for x, y in zip(rates(a), rates(b), strict=False) if y]


def summarize(res: dict[str, list[dict[str, Any]]], base: str) -> list[dict[str, Any]]:
    rows = []
    for name, blocks in res.items():
        lat = [x for b in blocks for x in b.get("lat_us", [])]
        ratios = [a / b for a, b in zip(rates(blocks), rates(res[base]), strict=False) if b]
        rows.append(
            {
                "case": name,
                "steps_per_s": median(rates(blocks)),
                "blocks": len(blocks),
                "p50_us": pct(lat, 50) if lat else float("nan"),
                "p99_us": pct(lat, 99) if lat else float("nan"),
                "srv_cpu_us": median(b["srv_cpu_us"] for b in blocks),
                "cli_cpu_us": median(b.get("cli_cpu_us", float("nan")) for b in blocks),
                "ratio_vs_base": paired_ratio(rates(blocks), rates(res[base])),
                "ratio_spread": spread(ratios),
                "block_rates": rates(blocks),
                "srv_cpu_vs_base": paired_ratio(
                    [b["srv_cpu_us"] for b in blocks], [b["srv_cpu_us"] for b in res[base]]
                ),
                "n_errors": sum(b.get("n_errors", 0) for b in blocks),
                "errors": [e for b in blocks for e in b.get("errors", [])][:3],
            }
        )
    return rows


# --- 1. sequential ------------------------------------------------------------------


def seq(srv: dict[str, Server], cfg: dict[str, Any], upc: UpstreamClient | None = None) -> dict[str, Any]:
    steps, warm, max_s = cfg["seq_steps"], cfg["seq_warmup"], cfg["block_max_s"]
    raw, ours = srv["raw"], srv["ours"]
    cases: dict[str, Case] = {
        "raw websockets client -> raw websockets server": lambda: asyncio.run(
            C.raw_seq(raw.url, steps, warm, max_s, raw.pid)
        ),
        "our EnvClient (sync) -> our server": lambda: C.ours_sync_seq(ours.url, steps, warm, max_s, ours.pid),
        "our AsyncEnvClient -> our server": lambda: asyncio.run(
            C.ours_async_seq(ours.url, steps, warm, max_s, ours.pid)
        ),
        "raw websockets client -> our server": lambda: asyncio.run(
            C.raw_seq(ours.url, steps, warm, max_s, ours.pid)
        ),
    }
    if "upstream" in srv:
        up = srv["upstream"]
        cases["raw websockets client -> upstream 0.10.0 server"] = lambda: asyncio.run(
            C.raw_seq(up.url, steps, warm, max_s, up.pid)
        )
    if "upstream" in srv and upc is not None:
        cmd = {
            "op": "seq",
            "base": srv["upstream"].base,
            "steps": steps,
            "warmup": warm,
            "max_s": max_s,
            "pid": srv["upstream"].pid,
        }
        cases["upstream EnvClient -> upstream 0.10.0 server"] = lambda: upc.call(cmd, max_s + 30)
    res = run_blocks(cases, cfg["seq_rounds"], cfg["seq_budget_s"], "seq")
    return {"rows": summarize(res, next(iter(cases)))}


def seq_table(out: dict[str, Any]) -> str:
    rows = [
        [
            r["case"],
            fmt(r["steps_per_s"]),
            fmt(r["p50_us"]),
            fmt(r["p99_us"]),
            fmt(r["srv_cpu_us"]),
            f"{r['srv_cpu_vs_base']:.2f}",
            f"{r['ratio_vs_base']:.2f}",
            r["ratio_spread"],
            r["blocks"],
        ]
        for r in out["rows"]
    ]
    return table(
        [
            "1 client, sequential WS steps",
            "steps/s",
            "p50 us",
            "p99 us",
            "server CPU us/step",
            "server CPU vs raw",
            "steps/s ratio vs raw (paired)",
            "per-block ratio range",
            "blocks",
        ],
        rows,
    )


# --- 2. concurrency -----------------------------------------------------------------


def conc(
    srv: dict[str, Server],
    cfg: dict[str, Any],
    live: list[subprocess.Popen[str]],
    upc: UpstreamClient | None = None,
) -> dict[str, Any]:
    max_s = cfg["block_max_s"]
    out: dict[str, Any] = {}
    for n in cfg["conc_ns"]:
        each = max(cfg["conc_min_each"], cfg["conc_total"] // n)

        def case(kind: str, s: Server, procs: int = 1, n: int = n, each: int = each) -> Case:
            return lambda: C.drive_block(kind, s.url, n, each, procs, max_s, s.pid, live)

        cases: dict[str, Case] = {
            "raw websockets -> raw server": case("raw", srv["raw"]),
            "AsyncEnvClient -> our server": case("ours", srv["ours"]),
            "raw websockets -> our server": case("raw", srv["ours"]),
        }
        if "upstream" in srv:
            cases["raw websockets -> upstream 0.10.0"] = case("raw", srv["upstream"])
            if upc is not None and n <= cfg["upstream_client_max_n"]:
                up = srv["upstream"]
                cmd = {
                    "op": "conc",
                    "base": up.base,
                    "n": n,
                    "steps_each": each,
                    "max_s": max_s,
                    "pid": up.pid,
                }
                cases["upstream EnvClient -> upstream 0.10.0"] = lambda cmd=cmd: upc.call(cmd, max_s + 120)
        rounds = cfg["conc_rounds_1000"] if n >= 1000 else cfg["conc_rounds"]
        print(f"  conc N={n}: {len(cases)} cases x {rounds} rounds, {each} steps/session", flush=True)
        res = run_blocks(cases, rounds, cfg["conc_budget_s"], f"conc{n}")
        out[str(n)] = {"steps_each": each, "rows": summarize(res, "raw websockets -> raw server")}
    return out


def conc_table(out: dict[str, Any]) -> str:
    rows = []
    for n, d in out.items():
        for r in d["rows"]:
            rows.append(
                [
                    n,
                    r["case"],
                    fmt(r["steps_per_s"]),
                    fmt(r["srv_cpu_us"]),
                    f"{r['srv_cpu_vs_base']:.2f}",
                    fmt(r["cli_cpu_us"]),
                    f"{r['ratio_vs_base']:.2f}",
                    r["ratio_spread"],
                    r["blocks"],
                    r["n_errors"],
                ]
            )
    return table(
        [
            "N sessions",
            "1 client process, asyncio",
            "aggregate steps/s",
            "server CPU us/step",
            "server CPU vs raw",
            "client CPU us/step",
            "steps/s ratio vs raw (paired)",
            "per-block ratio range",
            "blocks",
            "errors",
        ],
        rows,
    )


def workers(srv: dict[str, Server], cfg: dict[str, Any], live: list[subprocess.Popen[str]]) -> dict[str, Any]:
    max_s = cfg["block_max_s"]
    out: dict[str, Any] = {}
    for n in cfg["workers_ns"]:
        each = max(cfg["conc_min_each"], cfg["conc_total"] // n)

        def case(kind: str, s: Server, procs: int, n: int = n, each: int = each) -> Case:
            return lambda: C.drive_block(kind, s.url, n, each, procs, max_s, s.pid, live)

        cases = {
            "w1 p1": case("ours", srv["ours"], 1),
            "w2 p1": case("ours", srv["ours2"], 1),
            "w1 p2": case("ours", srv["ours"], 2),
            "w2 p2": case("ours", srv["ours2"], 2),
            "raw p2": case("raw", srv["raw"], 2),
        }
        rounds = cfg["conc_rounds_1000"] if n >= 1000 else cfg["conc_rounds"]
        print(f"  workers N={n}: {len(cases)} cases x {rounds} rounds", flush=True)
        res = run_blocks(cases, rounds, cfg["conc_budget_s"], f"workers{n}")
        rows = summarize(res, "raw p2")
        split = []
        for b in res["w2 p2"]:  # CPU share of the busiest uvicorn worker process
            cpu = sorted((v for v in b["srv_cpu_by_pid"].values()), reverse=True)
            split.append(cpu[0] / sum(cpu) if sum(cpu) else float("nan"))
        out[str(n)] = {
            "rows": rows,
            "gain_p1": paired_ratio(rates(res["w2 p1"]), rates(res["w1 p1"])),
            "gain_p2": paired_ratio(rates(res["w2 p2"]), rates(res["w1 p2"])),
            "gain_p1_range": spread(per_block(res["w2 p1"], res["w1 p1"])),
            "gain_p2_range": spread(per_block(res["w2 p2"], res["w1 p2"])),
            "w2_busiest_worker_cpu_share": median(split),
        }
    return out


def workers_table(out: dict[str, Any]) -> str:
    rows = []
    for n, d in out.items():
        by = {r["case"]: r for r in d["rows"]}
        raw = f"raw server {fmt(by['raw p2']['steps_per_s'])}"
        rows.append(
            [
                n,
                "1",
                fmt(by["w1 p1"]["steps_per_s"]),
                fmt(by["w2 p1"]["steps_per_s"]),
                f"{d['gain_p1']:.2f}",
                d["gain_p1_range"],
                "-",
            ]
        )
        rows.append(
            [
                n,
                "2",
                fmt(by["w1 p2"]["steps_per_s"]),
                fmt(by["w2 p2"]["steps_per_s"]),
                f"{d['gain_p2']:.2f}",
                d["gain_p2_range"],
                f"w1 {by['w1 p2']['ratio_vs_base']:.2f}, w2 {by['w2 p2']['ratio_vs_base']:.2f} ({raw})",
            ]
        )
    heads = [
        "N sessions",
        "client processes",
        "--workers 1 steps/s",
        "--workers 2 steps/s",
        "gain w2/w1 (paired)",
        "gain range",
        "vs raw websockets server, same 2 client procs (paired)",
    ]
    return table(heads, rows)


# --- 5. batch -----------------------------------------------------------------------


def batch(srv: dict[str, Server], cfg: dict[str, Any]) -> dict[str, Any]:
    ours, n, nb, max_s = srv["ours"], cfg["batch_sessions"], cfg["batch_batches"], cfg["block_max_s"]
    base = "64 connections, AsyncEnvClient.step each (1 process)"
    cases: dict[str, Case] = {
        base: lambda: asyncio.run(C.conc("ours", ours.url, n, nb, max_s, ours.pid)),
        "1 connection, AsyncEnvClient.step_batch(64 named sessions)": lambda: asyncio.run(
            C.batch_async(ours.url, n, nb, max_s, ours.pid)
        ),
        "1 connection, EnvClient.step_batch(64 named sessions)": lambda: C.batch_sync(
            ours.url, n, nb, max_s, ours.pid
        ),
    }
    res = run_blocks(cases, cfg["batch_rounds"], cfg["conc_budget_s"], "batch")
    return {"sessions": n, "rows": summarize(res, base)}


def batch_table(out: dict[str, Any]) -> str:
    rows = [
        [
            r["case"],
            fmt(r["steps_per_s"]),
            fmt(r["srv_cpu_us"]),
            f"{r['ratio_vs_base']:.2f}",
            r["ratio_spread"],
            r["blocks"],
        ]
        for r in out["rows"]
    ]
    return table(
        [
            "our server, 64 sessions",
            "steps/s",
            "server CPU us/step",
            "ratio vs 64 connections (paired)",
            "per-block ratio range",
            "blocks",
        ],
        rows,
    )
