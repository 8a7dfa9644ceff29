"""Upstream's own client (openenv 0.10.0 ``EnvClient``), as a long-lived helper process.

Run by ``bench/run.py`` with ``.venv-upstream/bin/python`` (upstream's import takes
~7 s, so the process is started once): it prints ``READY``, then answers one JSON
command per stdin line with one JSON result line, until stdin closes.

    {"op": "seq", "base": URL, "steps": S, "warmup": W, "max_s": T, "pid": SERVER_PID}
    {"op": "conc", "base": URL, "n": N, "steps_each": K, "max_s": T, "pid": SERVER_PID}

The client class is ``EchoClient`` of ``bench/baselines/upstream_echo.py`` (an
``EnvClient`` subclass written on upstream's public API). The parent side,
``UpstreamClient``, lives here too (module level is stdlib only, for both interpreters).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import subprocess
import sys
import time
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


async def seq(cmd: dict[str, Any]) -> dict[str, Any]:
    from upstream_echo import EchoAction, EchoClient  # bench/baselines: upstream's types

    client = EchoClient(base_url=cmd["base"])
    await client.connect()
    try:
        await client.reset()
        act = EchoAction(message="hello")
        for _ in range(cmd["warmup"]):
            await client.step(act)
        lat: list[float] = []
        n, deadline, clock = 0, time.perf_counter() + cmd["max_s"], time.perf_counter
        c0, t0 = cpu_s(cmd["pid"]), clock()
        while n < cmd["steps"] and clock() < deadline:
            t = clock()
            await client.step(act)
            lat.append((clock() - t) * 1e6)
            n += 1
        wall, srv = clock() - t0, cpu_s(cmd["pid"]) - c0
    finally:
        await client.close()
    return {"steps": n, "wall_s": wall, "steps_per_s": n / wall, "srv_cpu_us": srv / n * 1e6, "lat_us": lat}


async def conc(cmd: dict[str, Any]) -> dict[str, Any]:
    from upstream_echo import EchoAction, EchoClient

    act = EchoAction(message="hello")
    clients = []
    for _ in range(cmd["n"]):
        c = EchoClient(base_url=cmd["base"])
        await c.connect()
        await c.reset()
        clients.append(c)
    deadline = time.perf_counter() + cmd["max_s"]

    async def loop(c: Any) -> int:
        done = 0
        while done < cmd["steps_each"] and time.perf_counter() < deadline:
            await c.step(act)
            done += 1
        return done

    c0, p0, t0 = cpu_s(cmd["pid"]), time.process_time(), time.perf_counter()
    try:
        steps = sum(await asyncio.gather(*(loop(c) for c in clients)))
        wall, srv, cli = time.perf_counter() - t0, cpu_s(cmd["pid"]) - c0, time.process_time() - p0
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    return {
        "steps": steps,
        "wall_s": wall,
        "steps_per_s": steps / wall,
        "srv_cpu_us": srv / steps * 1e6,
        "cli_cpu_us": cli / steps * 1e6,
        "n_errors": 0,
        "errors": [],
    }


class UpstreamClient:
    """Parent side: the helper process, started now, stopped by PID via ``_util.stop_all``."""

    name = "upstream-client"

    def __init__(self) -> None:
        from _util import BASELINES, CHILDREN, UPSTREAM_PY

        argv = [str(UPSTREAM_PY), os.path.abspath(__file__), str(BASELINES)]
        self.proc = subprocess.Popen(
            argv, cwd=str(BASELINES), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        CHILDREN.append(self)
        self.ready = False

    def _readline(self, timeout_s: float) -> str:
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], timeout_s)[0]:
            raise TimeoutError(f"upstream client process {self.proc.pid} did not answer in {timeout_s} s")
        if not (line := self.proc.stdout.readline()):
            raise RuntimeError(f"upstream client process exited (rc {self.proc.poll()})")
        return line.strip()

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        if not self.ready:
            if (line := self._readline(timeout_s)) != "READY":
                raise RuntimeError(f"upstream client said {line!r}")
            self.ready = True

    def call(self, cmd: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.wait_ready()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        out: dict[str, Any] = json.loads(self._readline(timeout_s))
        if "error" in out:
            raise RuntimeError(f"upstream client: {out['error']}")
        return out

    def stop(self) -> None:
        from _util import CHILDREN

        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()  # the helper's loop ends at EOF
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()  # SIGKILL to self.proc.pid
                self.proc.wait()
        if self in CHILDREN:
            CHILDREN.remove(self)


def main() -> None:
    sys.path.insert(0, sys.argv[1])  # bench/baselines (upstream_echo.py)
    import upstream_echo  # noqa: F401  - pay upstream's import before READY

    print("READY", flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            out = asyncio.run(seq(cmd) if cmd["op"] == "seq" else conc(cmd))
        except Exception as exc:  # reported, not fatal: the parent decides
            out = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
