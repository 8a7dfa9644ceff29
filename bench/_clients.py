"""Client loops: raw ``websockets``, our ``EnvClient`` / ``AsyncEnvClient``, ``step_batch``.

Every loop is bounded by a step count AND a deadline. Each returns a dict with
``steps``, ``wall_s``, ``steps_per_s``, ``srv_cpu_us`` (server CPU per step, all its
processes) and, for sequential loops, the per-call latencies ``lat_us``.

``python bench/_clients.py drive SPEC_JSON`` is one client process of a multi-process
concurrency block (see ``drive_block``): it opens its sessions, prints ``READY``, waits
for ``GO`` on stdin, runs, prints its result as JSON, waits for ``CLOSE``, closes.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import RESET_FRAME, STEP_FRAME, raise_nofile, tree_cpu

OPEN_CONCURRENCY = 50  # sessions being opened at once


class Meter:
    """Wall time and server CPU (the server process and its descendants) of a window."""

    def __init__(self, server_pid: int | None) -> None:
        self.pid = server_pid

    def __enter__(self) -> Meter:
        self.cpu0 = tree_cpu(self.pid) if self.pid else {}
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.t0
        self.cpu1 = tree_cpu(self.pid) if self.pid else {}

    def result(self, steps: int, lat_us: list[float] | None = None, **extra: Any) -> dict[str, Any]:
        srv = sum(self.cpu1.get(p, 0.0) - self.cpu0.get(p, 0.0) for p in self.cpu1)
        out = {
            "steps": steps,
            "wall_s": self.wall,
            "steps_per_s": steps / self.wall if self.wall else 0.0,
            "srv_cpu_us": srv / steps * 1e6 if steps and self.pid else float("nan"),
            **extra,
        }
        if lat_us is not None:
            out["lat_us"] = lat_us
        return out


def _models() -> tuple[Any, Any]:
    from echo_env import MODELS, EchoAction

    return MODELS, EchoAction(message="hello")


# --- sequential: one client, one session ------------------------------------------


async def raw_seq(url: str, steps: int, warmup: int, max_s: float, pid: int | None) -> dict[str, Any]:
    """A raw websockets client sending upstream-format JSON frames (stdlib json)."""
    from websockets.asyncio.client import connect

    async with connect(url, compression=None, max_size=2**24) as ws:
        await ws.send(RESET_FRAME)
        json.loads(await ws.recv())
        for _ in range(warmup):
            await ws.send(STEP_FRAME)
            json.loads(await ws.recv())
        lat: list[float] = []
        n, deadline, clock = 0, time.perf_counter() + max_s, time.perf_counter
        with Meter(pid) as m:
            while n < steps and clock() < deadline:
                t = clock()
                await ws.send(STEP_FRAME)
                reply = json.loads(await ws.recv())
                lat.append((clock() - t) * 1e6)
                n += 1
    assert reply["type"] == "observation", reply
    return m.result(n, lat)


def ours_sync_seq(base: str, steps: int, warmup: int, max_s: float, pid: int | None) -> dict[str, Any]:
    from openenv import EnvClient

    models, action = _models()
    with EnvClient(base, models) as env:
        env.reset()
        for _ in range(warmup):
            env.step(action)
        lat: list[float] = []
        n, deadline, clock = 0, time.perf_counter() + max_s, time.perf_counter
        with Meter(pid) as m:
            while n < steps and clock() < deadline:
                t = clock()
                result = env.step(action)
                lat.append((clock() - t) * 1e6)
                n += 1
    assert result.observation.echoed_message == "hello"
    return m.result(n, lat)


async def ours_async_seq(base: str, steps: int, warmup: int, max_s: float, pid: int | None) -> dict[str, Any]:
    from openenv import AsyncEnvClient

    models, action = _models()
    async with AsyncEnvClient(base, models) as env:
        await env.reset()
        for _ in range(warmup):
            await env.step(action)
        lat: list[float] = []
        n, deadline, clock = 0, time.perf_counter() + max_s, time.perf_counter
        with Meter(pid) as m:
            while n < steps and clock() < deadline:
                t = clock()
                result = await env.step(action)
                lat.append((clock() - t) * 1e6)
                n += 1
    assert result.observation.echoed_message == "hello"
    return m.result(n, lat)


# --- concurrent: N sessions, one connection each, one asyncio loop ------------------


async def _gather_bounded(fns: list[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    sem = asyncio.Semaphore(limit)

    async def one(fn: Callable[[], Awaitable[Any]]) -> Any:
        async with sem:
            return await fn()

    return list(await asyncio.gather(*(one(f) for f in fns), return_exceptions=True))


async def open_sessions(kind: str, url: str, n: int) -> tuple[list[Any], list[str]]:
    """``kind`` "raw": raw websockets + upstream frames; "ours": one AsyncEnvClient each."""
    if kind == "raw":
        from websockets.asyncio.client import connect

        async def open_one() -> Any:
            ws = await connect(url, compression=None, max_size=2**24, open_timeout=60)
            await ws.send(RESET_FRAME)
            json.loads(await ws.recv())
            return ws
    else:
        from openenv import AsyncEnvClient

        models, _ = _models()

        async def open_one() -> Any:
            env = AsyncEnvClient(url, models, connect_timeout_s=60)
            await env.reset()
            return env

    got = await _gather_bounded([open_one] * n, OPEN_CONCURRENCY)
    errors = [f"open: {type(g).__name__}: {g}"[:200] for g in got if isinstance(g, BaseException)]
    return [g for g in got if not isinstance(g, BaseException)], errors


async def step_sessions(
    kind: str, sessions: list[Any], steps_each: int, max_s: float
) -> tuple[int, list[str]]:
    """Every session steps ``steps_each`` times, all concurrently; (total steps, errors)."""
    deadline = time.perf_counter() + max_s
    errors: list[str] = []
    _, action = _models()

    async def loop(s: Any) -> int:
        done = 0
        try:
            while done < steps_each and time.perf_counter() < deadline:
                if kind == "raw":
                    await s.send(STEP_FRAME)
                    json.loads(await s.recv())
                else:
                    await s.step(action)
                done += 1
        except Exception as exc:
            errors.append(f"step: {type(exc).__name__}: {exc}"[:200])
        return done

    counts = await asyncio.gather(*(loop(s) for s in sessions))
    return sum(counts), errors


async def close_sessions(sessions: list[Any]) -> None:
    await _gather_bounded([s.close for s in sessions], OPEN_CONCURRENCY)


async def conc(kind: str, url: str, n: int, steps_each: int, max_s: float, pid: int | None) -> dict[str, Any]:
    """Open N sessions (untimed), time N concurrent step loops, close (untimed)."""
    sessions, errors = await open_sessions(kind, url, n)
    try:
        with Meter(pid) as m:
            steps, errs = await step_sessions(kind, sessions, steps_each, max_s)
    finally:
        await close_sessions(sessions)
    return m.result(
        steps, None, sessions=len(sessions), errors=(errors + errs)[:3], n_errors=len(errors + errs)
    )


# --- batch: N named sessions on ONE connection ---------------------------------------


async def batch_async(base: str, n: int, batches: int, max_s: float, pid: int | None) -> dict[str, Any]:
    from openenv import AsyncEnvClient

    models, action = _models()
    names = [f"s{i}" for i in range(n)]
    async with AsyncEnvClient(base, models) as env:
        await env.reset_batch(names)
        actions = dict.fromkeys(names, action)
        await env.step_batch(actions)  # warm-up
        b, deadline = 0, time.perf_counter() + max_s
        with Meter(pid) as m:
            while b < batches and time.perf_counter() < deadline:
                results = await env.step_batch(actions)
                b += 1
    assert len(results) == n
    assert results[-1].observation.echoed_message == "hello"
    return m.result(b * n, None, batches=b)


def batch_sync(base: str, n: int, batches: int, max_s: float, pid: int | None) -> dict[str, Any]:
    from openenv import EnvClient

    models, action = _models()
    names = [f"s{i}" for i in range(n)]
    with EnvClient(base, models) as env:
        env.reset_batch(names)
        actions = dict.fromkeys(names, action)
        env.step_batch(actions)
        b, deadline = 0, time.perf_counter() + max_s
        with Meter(pid) as m:
            while b < batches and time.perf_counter() < deadline:
                results = env.step_batch(actions)
                b += 1
    assert len(results) == n
    return m.result(b * n, None, batches=b)


# --- multi-process concurrency ----------------------------------------------------------


def _readline(proc: subprocess.Popen[str], deadline: float) -> str:
    assert proc.stdout is not None
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
        raise TimeoutError(f"client process {proc.pid} did not answer in time")
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"client process {proc.pid} exited (rc {proc.poll()})")
    return line.strip()


def drive_block(
    kind: str,
    url: str,
    n: int,
    steps_each: int,
    procs: int,
    max_s: float,
    pid: int | None,
    live: list[subprocess.Popen[str]],
) -> dict[str, Any]:
    """N sessions split over ``procs`` client processes, started together on ``GO``.

    Rate = all steps / (last finish - first start). ``live`` holds the client processes
    while they run, so that the caller can kill them by PID on an interrupt.
    """
    shares = [n // procs + (1 if i < n % procs else 0) for i in range(procs)]
    kids: list[subprocess.Popen[str]] = []
    deadline = time.monotonic() + max_s + 120  # opening 1,000 sessions takes a while
    try:
        for share in shares:
            spec = json.dumps(
                {"kind": kind, "url": url, "n": share, "steps_each": steps_each, "max_s": max_s}
            )
            kid = subprocess.Popen(
                [sys.executable, __file__, "drive", spec],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            kids.append(kid)
            live.append(kid)
        for kid in kids:
            if (line := _readline(kid, deadline)) != "READY":
                raise RuntimeError(f"client process said {line!r}")
        cpu0 = tree_cpu(pid) if pid else {}
        for kid in kids:
            assert kid.stdin is not None
            kid.stdin.write("GO\n")
            kid.stdin.flush()
        results = [json.loads(_readline(kid, deadline)) for kid in kids]
        cpu1 = tree_cpu(pid) if pid else {}
        for kid in kids:
            assert kid.stdin is not None
            kid.stdin.write("CLOSE\n")
            kid.stdin.flush()
        for kid in kids:
            kid.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        for kid in kids:
            if kid.poll() is None:
                kid.kill()
                kid.wait()
            live.remove(kid)
    steps = sum(r["steps"] for r in results)
    wall = max(r["t1"] for r in results) - min(r["t0"] for r in results)
    per_pid = {p: cpu1[p] - cpu0.get(p, 0.0) for p in cpu1}
    errors = [e for r in results for e in r["errors"]]
    n_errors = sum(r["n_errors"] for r in results)
    return {
        "steps": steps,
        "wall_s": wall,
        "steps_per_s": steps / wall if wall else 0.0,
        "srv_cpu_us": sum(per_pid.values()) / steps * 1e6 if steps and pid else float("nan"),
        "cli_cpu_us": sum(r["cpu_s"] for r in results) / steps * 1e6 if steps else float("nan"),
        "srv_cpu_by_pid": per_pid,
        "sessions": sum(r["sessions"] for r in results),
        "n_errors": n_errors,
        "errors": errors[:3],
    }


def _drive(spec: dict[str, Any]) -> None:
    raise_nofile()
    loop = asyncio.new_event_loop()
    sessions, errors = loop.run_until_complete(open_sessions(spec["kind"], spec["url"], spec["n"]))
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        return
    t0, c0 = time.monotonic(), time.process_time()
    steps, errs = loop.run_until_complete(
        step_sessions(spec["kind"], sessions, spec["steps_each"], spec["max_s"])
    )
    t1, c1 = time.monotonic(), time.process_time()
    print(
        json.dumps(
            {
                "steps": steps,
                "t0": t0,
                "t1": t1,
                "cpu_s": c1 - c0,
                "sessions": len(sessions),
                "errors": [*errors, *errs][:3],
                "n_errors": len(errors) + len(errs),
            }
        ),
        flush=True,
    )
    sys.stdin.readline()
    loop.run_until_complete(close_sessions(sessions))
    loop.close()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "drive":
        _drive(json.loads(sys.argv[2]))
    else:
        sys.exit("usage: python bench/_clients.py drive SPEC_JSON (started by bench/run.py)")
