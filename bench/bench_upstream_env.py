"""An env written for upstream OpenEnv, served by upstream 0.10.0 and by ours: steps/s.

The same files (``bench/upstream_env/bench_counter_env``: ``server/app.py`` calls
``openenv.core.env_server.http_server.create_app``) are served three ways, each in its
own child process on 127.0.0.1:

* ``upstream``: ``python -m uvicorn bench_counter_env.server.app:app`` under
  ``.venv-upstream`` (openenv 0.10.0);
* ``ours uvicorn``: the same command under this venv (our ``openenv.core`` adapters);
* ``ours serve``: ``openenv serve bench/upstream_env/bench_counter_env``.

One client for all (``websockets``, upstream's frames: ``reset`` then ``step``):
sequential steps on one connection, and 64 sessions (one connection each, connected and
reset before the clock starts) stepping at once. Rounds alternate the servers; a figure
is the median over rounds, a ratio the median of per-round ratios to upstream in the
same round.

    .venv/bin/python bench/bench_upstream_env.py [--steps 2000] [--sessions 64] [--conc-steps 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import (
    ROOT,
    UPSTREAM_PY,
    Server,
    free_port,
    loadavg,
    median,
    stop_all,
    table,
    upstream_available,
)

ENV_DIR = ROOT / "bench" / "upstream_env"
APP = "bench_counter_env.server.app:app"
STEP = json.dumps({"type": "step", "data": {"add": 1}})
RESET = json.dumps({"type": "reset", "data": {}})


def servers() -> dict[str, Server]:
    def uvicorn(python: str, name: str) -> Server:
        port = free_port()
        argv = [
            python,
            "-m",
            "uvicorn",
            APP,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
        return Server(name, argv, port, cwd=ENV_DIR, env={"PYTHONPATH": str(ENV_DIR)})

    port = free_port()
    serve = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        str(ENV_DIR / "bench_counter_env"),
        "--port",
        str(port),
    ]
    return {
        "upstream": uvicorn(str(UPSTREAM_PY), "upstream"),
        "ours uvicorn": uvicorn(sys.executable, "ours uvicorn"),
        "ours serve": Server("ours serve", serve, port, env={"OPENENV_LOG_LEVEL": "warning"}),
    }


async def _session(url: str, steps: int, opened: asyncio.Queue[None], go: asyncio.Event) -> int:
    from websockets.asyncio.client import connect

    async with connect(url, compression=None, max_size=None) as ws:
        await ws.send(RESET)
        json.loads(await ws.recv())
        opened.put_nowait(None)
        await go.wait()
        for _ in range(steps):
            await ws.send(STEP)
            reply = json.loads(await ws.recv())
            if reply.get("type") != "observation":
                raise RuntimeError(f"step answered {reply}")
    return steps


async def _rate(url: str, sessions: int, steps: int) -> float:
    """Steps/s of ``sessions`` sessions stepping at once: every session is connected and
    reset first; the clock runs from the first step to the last reply."""
    opened: asyncio.Queue[None] = asyncio.Queue()
    go = asyncio.Event()
    tasks = [asyncio.create_task(_session(url, steps, opened, go)) for _ in range(sessions)]
    for _ in range(sessions):
        await asyncio.wait_for(opened.get(), timeout=60)
    t0 = time.perf_counter()
    go.set()
    done = await asyncio.gather(*tasks)
    return sum(done) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000, help="sequential steps per round")
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--conc-steps", type=int, default=50, help="steps per session at --sessions")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    why = upstream_available()
    if why:
        print(f"bench_upstream_env: {why}", file=sys.stderr)
        return 2
    procs = servers()
    rates: dict[str, dict[str, list[float]]] = {n: {"seq": [], "conc": []} for n in procs}
    try:
        for proc in procs.values():
            proc.start()
        for proc in procs.values():
            proc.wait_ready()
        per_session = max(1, args.conc_steps)
        for _ in range(args.rounds):
            for name, proc in procs.items():
                rates[name]["seq"].append(asyncio.run(_rate(proc.url, 1, args.steps)))
                rates[name]["conc"].append(asyncio.run(_rate(proc.url, args.sessions, per_session)))
    finally:
        stop_all()
    rows = []
    for name in procs:
        row: list[object] = [name]
        for kind in ("seq", "conc"):
            ratios = [o / u for o, u in zip(rates[name][kind], rates["upstream"][kind], strict=True)]
            row += [f"{median(rates[name][kind]):.0f}", f"{median(ratios):.2f}x"]
        rows.append(row)
    print(f"load {loadavg()}; {args.rounds} rounds; {args.steps} sequential steps; "
          f"{args.sessions} sessions x {args.conc_steps} steps")
    print(
        table(
            ["server", "seq steps/s", "vs upstream", f"{args.sessions} sessions steps/s", "vs upstream"], rows
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
