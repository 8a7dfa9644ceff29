"""Terminal env: step and reset latency per sandbox level, against a bare PTY, one run.

In alternating blocks (the same minute on the machine, so the figures compare):

* step: ``TerminalEnv.step(run "echo hi")`` in this process (asyncio: PTY reader on
  the loop, marker parsing, ANSI cleanup, observation) against the floor: the same
  ``bash`` on a PTY with the same prompt marker, no sandbox, driven by a blocking
  ``write``/``select`` loop. Overhead = env minus bare, per step.
* the same step through ``openenv serve terminal`` with the sync ``EnvClient``;
* reset: a new sandbox and shell (the previous episode torn down), free shell and
  with a task's files and setup;
* memory per idle session: server RSS and the session's processes (PSS, psutil) with
  20 open sessions.

    .venv/bin/python bench/bench_terminal.py            # about a minute
    .venv/bin/python bench/bench_terminal.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import select
import subprocess
import sys
import time
from typing import Any

import psutil
from _util import Server, fmt, free_port, machine, median, pct, proc_status, stop_all, table
from terminal_env import MODELS, TerminalAction, TerminalEnv

from openenv import AsyncEnvClient, EnvClient
from openenv.sandbox._bwrap import bwrap_works

MARK = re.compile(rb"\x1eBENCH:(\d+):[^\x1e]*\x1e")
ECHO = TerminalAction(command="echo hi")


class BarePty:
    """bash on a PTY with the env's marker, no sandbox, blocking I/O: the floor."""

    def __init__(self) -> None:
        master, slave = os.openpty()
        env = {"PATH": "/usr/bin:/bin", "TERM": "dumb", "PS1": "", "PS2": "", "HISTFILE": "/dev/null"}
        env["PROMPT_COMMAND"] = 'printf "\\036BENCH:%s:%s\\036" "$?" "$PWD"'
        self.proc = subprocess.Popen(
            ["setsid", "--ctty", "bash", "--noprofile", "--norc", "--noediting", "-i"],
            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
        )
        os.close(slave)
        self.fd = master
        os.write(master, b"stty -echo -icanon\n")
        self.wait(2)

    def wait(self, marks: int = 1) -> None:
        buf, deadline = b"", time.monotonic() + 10
        while len(MARK.findall(buf)) < marks and time.monotonic() < deadline:
            select.select([self.fd], [], [], 1.0)
            buf += os.read(self.fd, 65536)

    def step(self) -> None:
        os.write(self.fd, b"echo hi\n")
        self.wait()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(5)
        os.close(self.fd)


async def env_steps(env: TerminalEnv, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await env.step(ECHO)
        out.append(time.perf_counter() - t0)
    return out


def bare_steps(bare: BarePty, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        bare.step()
        out.append(time.perf_counter() - t0)
    return out


async def resets(level: str, n: int, options: dict[str, Any], pool_size: int) -> list[float]:
    """Reset latency; with a pool, each reset waits (untimed) until the pool is full again,
    as between episodes of real length."""
    env = TerminalEnv(sandbox=level, pool_size=pool_size)
    pool = env.resources.pool
    out = []
    try:
        for _ in range(n):
            for _ in range(500):
                if len(pool._ready) >= pool_size:
                    break
                await asyncio.sleep(0.01)
            await asyncio.gather(*env._closing)
            t0 = time.perf_counter()
            await env.reset(options=options)
            out.append(time.perf_counter() - t0)
    finally:
        await env.close()
    return out


async def measure_inprocess(levels: list[str], rounds: int, steps: int, n_resets: int) -> dict[str, Any]:
    envs = {}
    for level in levels:
        envs[level] = TerminalEnv(sandbox=level)
        await envs[level].reset(options={"free_shell": True})
        await env_steps(envs[level], 50)  # warm up
    bare = BarePty()
    bare_steps(bare, 50)
    step: dict[str, list[float]] = {"bare": [], **{lv: [] for lv in levels}}
    for _ in range(rounds):
        step["bare"] += bare_steps(bare, steps)
        for level in levels:
            step[level] += await env_steps(envs[level], steps)
    bare.close()
    for env in envs.values():
        await env.close()
    reset: dict[str, dict[str, list[float]]] = {}
    for level in levels:
        task, free = {"task_id": "organize-by-extension"}, {"free_shell": True}
        reset[level] = {
            "free shell, no pool (new sandbox + shell)": await resets(level, n_resets, free, 0),
            "free shell, warm pool": await resets(level, n_resets, free, 2),
            "task (files copied in), warm pool": await resets(level, n_resets, task, 2),
        }
    return {"step": step, "reset": reset}


def served(level: str) -> Server:
    script = os.path.join(os.path.dirname(sys.executable), "openenv")
    argv = [script, "serve", "terminal", "--host", "127.0.0.1", "--sandbox", level]
    port = free_port()
    env = {"OPENENV_LOG_LEVEL": "warning"}
    server = Server(f"terminal-{level}", [*argv, "--port", str(port)], port, env=env)
    server.start().wait_ready()
    return server


def tree_pss(pid: int) -> tuple[float, int]:
    """PSS (bytes) and count of ``pid``'s descendants."""
    kids = psutil.Process(pid).children(recursive=True)
    total = 0.0
    for p in kids:
        try:
            total += p.memory_full_info().pss
        except psutil.Error:
            continue
    return total, len(kids)


async def idle_memory(server: Server, sessions: int) -> dict[str, float]:
    """Per idle session: server RSS growth and its processes' PSS, net of the warm pool."""
    client = AsyncEnvClient(server.base, MODELS, timeout_s=60)
    await client.reset(free_shell=True)  # the pool fills; its shells are the baseline
    await client.close()
    await asyncio.sleep(2.0)
    before, (pss0, n0) = proc_status(server.pid)["VmRSS"], tree_pss(server.pid)
    client = AsyncEnvClient(server.base, MODELS, timeout_s=60)
    await client.reset_batch([f"s{i}" for i in range(sessions)], free_shell=True)
    await asyncio.sleep(2.0)  # let the pool refill: it is not part of the sessions
    after, (pss1, n1) = proc_status(server.pid)["VmRSS"], tree_pss(server.pid)
    await client.close()
    return {
        "server_kib": (after - before) / sessions,
        "processes_kib": (pss1 - pss0) / 1024 / sessions,
        "procs": (n1 - n0) / sessions,
    }


def measure_served(levels: list[str], steps: int, sessions: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for level in levels:
        server = served(level)
        try:
            with EnvClient(server.base, MODELS, timeout_s=60) as env:
                env.reset(free_shell=True)
                for _ in range(50):
                    env.step(ECHO)
                ts = []
                for _ in range(steps):
                    t0 = time.perf_counter()
                    env.step(ECHO)
                    ts.append(time.perf_counter() - t0)
            out[level] = {"step": ts, "memory": asyncio.run(idle_memory(server, sessions))}
        finally:
            server.stop()
    return out


def report(inproc: dict[str, Any], served_: dict[str, Any], levels: list[str]) -> str:
    bare = median(inproc["step"]["bare"]) * 1e3
    rows = [["bare PTY (no sandbox)", fmt(bare, 3), fmt(pct(inproc["step"]["bare"], 90) * 1e3, 3), "-"]]
    for level in levels:
        ts = inproc["step"][level]
        rows.append([f"env in-process, {level}", fmt(median(ts) * 1e3, 3), fmt(pct(ts, 90) * 1e3, 3),
                     fmt(median(ts) * 1e3 - bare, 3)])
    for level in levels:
        ts = served_[level]["step"]
        rows.append([f"env over WebSocket, {level}", fmt(median(ts) * 1e3, 3), fmt(pct(ts, 90) * 1e3, 3),
                     fmt(median(ts) * 1e3 - bare, 3)])
    text = "Step `echo hi` (ms)\n\n" + table(["path", "median", "p90", "over bare"], rows)
    rows = []
    for level in levels:
        for kind, ts in inproc["reset"][level].items():
            rows.append([level, kind, fmt(median(ts) * 1e3, 1), fmt(pct(ts, 90) * 1e3, 1)])
    text += "\n\nReset (ms)\n\n" + table(["level", "reset", "median", "p90"], rows)
    rows = []
    for level in levels:
        mem = served_[level]["memory"]
        rows.append([level, fmt(mem["server_kib"], 0), fmt(mem["processes_kib"], 0), fmt(mem["procs"], 1)])
    headers = ["level", "server RSS", "its processes (PSS)", "processes"]
    text += "\n\nMemory per idle session (KiB)\n\n" + table(headers, rows)
    return text


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    levels = ["none"] + ([] if bwrap_works(190_000 + 4096 if os.geteuid() == 0 else None) else ["strict"])
    rounds, steps, n_resets, sessions = (3, 100, 10, 10) if args.quick else (8, 250, 30, 20)
    t0 = time.monotonic()
    try:
        inproc = asyncio.run(measure_inprocess(levels, rounds, steps, n_resets))
        served_ = measure_served(levels, steps, sessions)
    finally:
        stop_all()
    print(json.dumps(machine()))
    print(report(inproc, served_, levels))
    print(f"\n({time.monotonic() - t0:.0f} s)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"machine": machine(), "inprocess": inproc, "served": served_}, f)


if __name__ == "__main__":
    main()
