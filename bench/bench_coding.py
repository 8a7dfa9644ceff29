"""Coding env: step, reset and grading latency against bare subprocesses, one run.

In alternating blocks (same minute on the machine, so the ratios are fair):

* step: ``CodingEnv.step(CodeAction(code="x = 1"))`` in this process (env, worker
  protocol, sandboxed worker under bubblewrap where it works) against the bare
  minimum: a persistent ``python -I -u -c`` subprocess with no sandbox that reads a
  length-prefixed cell from stdin, ``exec``s it in one namespace and answers. Also the
  same step through ``openenv serve coding`` with the sync ``EnvClient`` (WebSocket);
* reset: from the warm pool (``pool_size`` 4, refilled between resets) against a
  runtime without a pool (a new sandbox and interpreter per reset);
* grading: each problem's reference solution through ``Grader.grade`` (a fresh
  sandbox per grading) against the same grader script run in a bare subprocess; and
  all of them in one ``Grader.grade_many`` batch (one sandbox, a forked child each).

    .venv/bin/python bench/bench_coding.py             # about a minute
    .venv/bin/python bench/bench_coding.py --quick
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _util import Server, fmt, free_port, machine, median, pct, spread, stop_all, table
from coding_env import MODELS, CodeAction
from coding_env._runtime import CodingRuntime, CodingSettings
from coding_env._worker import default_python
from coding_env.env import CodingEnv

from openenv import EnvClient

#: The bare baseline of a grading: one plain interpreter runs the solution, then each test
#: on a copy of the solution's names (no sandbox, no separate solution process).
BARE_GRADE = r"""
import json, sys
job = json.load(sys.stdin)
ns = {}
exec(job["solution"], ns)
for t in job["tests"]:
    try:
        exec(t["code"], dict(ns))
    except Exception:
        pass
"""

BARE = r"""
import os, struct, json
ns = {"__name__": "__main__"}
while True:
    head = os.read(0, 4)
    if len(head) < 4:
        break
    n = struct.unpack(">I", head)[0]
    body = b""
    while len(body) < n:
        body += os.read(0, n - len(body))
    exec(json.loads(body)["code"], ns)
    out = json.dumps({"ok": True}).encode()
    os.write(1, struct.pack(">I", len(out)) + out)
"""
CELL = "x = 1"


class Bare:
    """A persistent interpreter with no sandbox: the floor a step cannot beat."""

    def __init__(self, python: str) -> None:
        argv = [python, "-I", "-u", "-c", BARE]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def step(self, code: str) -> None:
        body = json.dumps({"code": code}).encode()
        self.stdin.write(struct.pack(">I", len(body)) + body)
        self.stdin.flush()
        n = struct.unpack(">I", self.stdout.read(4))[0]
        self.stdout.read(n)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_step(rt: CodingRuntime, url: str, blocks: int, n: int) -> dict[str, Any]:
    bare = Bare(rt.python)
    env = CodingEnv(resources=rt)
    env.reset(options={"task_id": "two_sum", "max_steps": 10**6})
    client = EnvClient(url, MODELS)
    client.reset(task_id="two_sum", max_steps=10**6)
    action = CodeAction(code=CELL)
    names = ("bare", "env", "ws")
    rows: dict[str, list[float]] = {k: [] for name in names for k in (name, f"all_{name}")}
    try:
        for _ in range(3 * n):  # warm-up
            bare.step(CELL)
            env.step(action)
            client.step(action)
        for b in range(blocks):
            order = ["bare", "env", "ws"] if b % 2 == 0 else ["ws", "env", "bare"]
            for name in order:
                fn = {"bare": lambda: bare.step(CELL), "env": lambda: env.step(action),
                      "ws": lambda: client.step(action)}[name]
                times = timed(fn, n)
                rows[name].append(median(times))
                rows[f"all_{name}"] += times
    finally:
        bare.close()
        env.close()
        client.close()
    overhead = [e - b for e, b in zip(rows["env"], rows["bare"], strict=True)]
    ws_overhead = [w - b for w, b in zip(rows["ws"], rows["bare"], strict=True)]
    return {
        "bare_p50_us": median(rows["all_bare"]) * 1e6,
        "env_p50_us": median(rows["all_env"]) * 1e6,
        "ws_p50_us": median(rows["all_ws"]) * 1e6,
        "bare_p99_us": pct(rows["all_bare"], 99) * 1e6,
        "env_p99_us": pct(rows["all_env"], 99) * 1e6,
        "ws_p99_us": pct(rows["all_ws"], 99) * 1e6,
        "env_overhead_us": median(overhead) * 1e6,
        "env_overhead_range_us": spread([o * 1e6 for o in overhead]),
        "ws_overhead_us": median(ws_overhead) * 1e6,
        "blocks": blocks,
        "steps_per_block": n,
    }


def bench_reset(pooled: CodingRuntime, cold: CodingRuntime, n: int) -> dict[str, Any]:
    warm_env, cold_env = CodingEnv(resources=pooled), CodingEnv(resources=cold)
    warm: list[float] = []
    fresh: list[float] = []
    try:
        for i in range(n):
            pooled.pool.wait_full(30)  # an idle server: the pool has refilled
            time.sleep(0.05)  # and the retired worker is closed
            t0 = time.perf_counter()
            warm_env.reset(options={"index": i % 10})
            warm.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            cold_env.reset(options={"index": i % 10})
            fresh.append(time.perf_counter() - t0)
    finally:
        warm_env.close()
        cold_env.close()
    return {
        "pool_p50_ms": median(warm) * 1e3,
        "pool_p90_ms": pct(warm, 90) * 1e3,
        "no_pool_p50_ms": median(fresh) * 1e3,
        "no_pool_p90_ms": pct(fresh, 90) * 1e3,
        "resets": n,
    }


def bench_grade(rt: CodingRuntime, limit: int) -> dict[str, Any]:
    rows = [json.loads(line) for line in _problem_lines()][:limit]
    ours: list[float] = []
    bare: list[float] = []
    for row in rows:
        t0 = time.perf_counter()
        grade = rt.grader.grade(row["solution"], row["tests"])
        ours.append(time.perf_counter() - t0)
        assert grade.reward == 1.0, (row["id"], grade.to_json())
        job = json.dumps({"solution": row["solution"], "tests": row["tests"]}).encode()
        t0 = time.perf_counter()
        subprocess.run([rt.python, "-I", "-c", BARE_GRADE], input=job, capture_output=True, check=True)
        bare.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    batch = rt.grader.grade_many([(row["solution"], row["tests"]) for row in rows])
    batch_s = time.perf_counter() - t0
    assert all(g.reward == 1.0 for g in batch)
    return {
        "batch_per_job_ms": batch_s / len(rows) * 1e3,
        "batch_total_s": batch_s,
        "grade_p50_ms": median(ours) * 1e3,
        "grade_p90_ms": pct(ours, 90) * 1e3,
        "bare_p50_ms": median(bare) * 1e3,
        "ratio": median(o / b for o, b in zip(ours, bare, strict=True)),
        "problems": len(rows),
    }


def serve_coding(env_kwargs: dict[str, Any]) -> Server:
    """``openenv serve coding`` in a child process (stopped by PID at exit)."""
    port = free_port()
    argv = [sys.executable, "-m", "openenv", "serve", "coding", "--port", str(port)]
    server = Server("coding", argv, port, env={"OPENENV_ENV_KWARGS": json.dumps(env_kwargs)}).start()
    server.wait_ready()
    return server


def _problem_lines() -> list[str]:
    path = Path(sys.modules[CodingEnv.__module__].__file__ or "").with_name("data") / "problems.jsonl"
    return path.read_text().splitlines()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    blocks, n, resets, problems = (4, 200, 10, 10) if args.quick else (12, 500, 30, 60)
    info = machine()
    python, _ = default_python()
    settings = CodingSettings(pool_size=4, max_steps=10**6)  # cells never end the episode
    results: dict[str, Any] = {"machine": info, "python_in_sandbox": python}
    pooled = CodingRuntime(settings).start()
    cold = CodingRuntime(CodingSettings(pool_size=0, max_steps=10**6))
    try:
        server = serve_coding({"pool_size": 2, "max_steps": 10**6})
        pooled.pool.wait_full(60)
        probe = pooled.pool.acquire()
        results["sandbox"] = probe.sandbox.describe()["level"]
        pooled.pool.retire(probe)
        results["step"] = bench_step(pooled, server.base, blocks, n)
        server.stop()
        results["reset"] = bench_reset(pooled, cold, resets)
        results["grade"] = bench_grade(cold, problems)
    finally:
        pooled.close()
        cold.close()
        stop_all()
    report(results)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


def report(r: dict[str, Any]) -> None:
    s, rs, g = r["step"], r["reset"], r["grade"]
    print(f"machine: {r['machine']}; sandbox: {r['sandbox']}")
    print(table(
        ["figure", "ours", "baseline (same run)", "detail", "target", "met"],
        [
            ["step `x = 1`, env.step - bare exec subprocess", f"+{fmt(s['env_overhead_us'])} us",
             f"bare p50 {fmt(s['bare_p50_us'])} us", f"env p50 {fmt(s['env_p50_us'])} us, p99 "
             f"{fmt(s['env_p99_us'])} us; per-block {s['env_overhead_range_us']} us",
             "<= 1 ms", "yes" if s["env_overhead_us"] <= 1000 else "no"],
            ["step over WebSocket (EnvClient) - bare", f"+{fmt(s['ws_overhead_us'])} us",
             f"bare p50 {fmt(s['bare_p50_us'])} us",
             f"p50 {fmt(s['ws_p50_us'])} us, p99 {fmt(s['ws_p99_us'])} us",
             "-", "-"],
            ["reset from the warm pool", f"{fmt(rs['pool_p50_ms'], 1)} ms",
             f"no pool {fmt(rs['no_pool_p50_ms'], 1)} ms", f"p90 {fmt(rs['pool_p90_ms'], 1)} ms "
             f"(no pool p90 {fmt(rs['no_pool_p90_ms'], 1)} ms)", "<= 20 ms",
             "yes" if rs["pool_p50_ms"] <= 20 else "no"],
            ["grading a reference solution (fresh sandbox)", f"{fmt(g['grade_p50_ms'], 1)} ms",
             f"bare subprocess {fmt(g['bare_p50_ms'], 1)} ms", f"p90 {fmt(g['grade_p90_ms'], 1)} ms; "
             f"{g['ratio']:.2f}x bare; {g['problems']} problems", "-", "-"],
            ["grading in one batch (grade_many), per solution", f"{fmt(g['batch_per_job_ms'], 1)} ms",
             f"one sandbox each {fmt(g['grade_p50_ms'], 1)} ms",
             f"{g['problems']} solutions in {g['batch_total_s']:.2f} s, a forked child each", "-", "-"],
        ],
    ))


if __name__ == "__main__":
    main()
