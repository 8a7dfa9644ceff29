"""Capture proxy throughput, ours against upstream OpenEnv 0.10's, same backend, same run.

Three child processes on 127.0.0.1: the vLLM-shaped backend of bench_capture.py (a fixed
reply of ``--tokens`` token ids with logprobs and ``prompt_token_ids``, no decode delay),
``openenv capture serve`` (this tree, .venv) and upstream's
``python -m openenv.core.harness.capture.server`` (.venv-upstream, started outside this
tree), both at level ``tokens`` in front of the same backend. A client keeps
``--concurrency`` non-streaming chat completions in flight, each worker on its own
session, for ``--seconds`` per round; rounds alternate between the proxies (and the
backend directly, for reference). Figures: completed calls per second, the median over
rounds, and ours / upstream's. Every call a proxy answered 200 must be in its sessions
(checked at the end).

    .venv/bin/python bench/bench_capture_upstream.py [--concurrency 32] [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._util import free_port, loadavg, median, table  # noqa: E402
from bench.bench_capture import BODY, start_proxy, wait_up  # noqa: E402

UPSTREAM_PY = ROOT / ".venv-upstream" / "bin" / "python"


def start_upstream(backend: str, port: int) -> subprocess.Popen[bytes]:
    argv = [str(UPSTREAM_PY), "-m", "openenv.core.harness.capture.server", "--llm-url", backend]
    argv += ["--port", str(port), "--capture-level", "tokens"]
    return subprocess.Popen(argv, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def load(url: str, keys: list[str], seconds: float) -> tuple[int, int]:
    """(calls answered 200, other answers) with one worker per key for ``seconds``."""
    done = failed = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=len(keys), max_keepalive_connections=len(keys))
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker(key: str) -> None:
            nonlocal done, failed
            headers = {"authorization": f"Bearer {key}"} if key else {}
            while time.monotonic() < deadline:
                reply = await client.post(url, json=BODY, headers=headers)
                if reply.status_code == 200:
                    done += 1
                else:
                    failed += 1

        await asyncio.gather(*(worker(k) for k in keys))
    return done, failed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tokens", type=int, default=64)
    args = p.parse_args()
    if not UPSTREAM_PY.exists():
        raise SystemExit(f"{UPSTREAM_PY} is missing: upstream OpenEnv 0.10 is the baseline")
    bport = free_port()
    bench_capture = str(ROOT / "bench" / "bench_capture.py")
    children = [
        subprocess.Popen(
            [sys.executable, bench_capture, "--backend-child", str(bport), str(args.tokens), "0"]
        )
    ]
    try:
        backend = f"http://127.0.0.1:{bport}/v1"
        wait_up(backend + "/chat/completions", children[0])
        targets: dict[str, tuple[str, list[str]]] = {
            "direct": (backend + "/chat/completions", [""] * args.concurrency)
        }
        for name, start in (
            ("ours", lambda b, port: start_proxy(b, port, None)),
            ("upstream", start_upstream),
        ):
            port = free_port()
            children.append(start(backend, port))
            proxy = f"http://127.0.0.1:{port}"
            wait_up(proxy + "/health", children[-1])
            keys = [
                httpx.post(proxy + "/sessions", json={}).json()["session_id"] for _ in range(args.concurrency)
            ]
            targets[name] = (proxy + "/v1/chat/completions", keys)
        rates: dict[str, list[float]] = {name: [] for name in targets}
        answered: dict[str, int] = dict.fromkeys(targets, 0)
        for name, (url, keys) in targets.items():  # warm
            answered[name] += asyncio.run(load(url, keys, 1.0))[0]
        for r in range(args.rounds):
            for name in list(targets) if r % 2 == 0 else list(targets)[::-1]:
                url, keys = targets[name]
                ok, bad = asyncio.run(load(url, keys, args.seconds))
                if bad:
                    raise SystemExit(f"{name}: {bad} calls failed")
                answered[name] += ok
                rates[name].append(ok / args.seconds)
        for name in ("ours", "upstream"):
            proxy = targets[name][0].rsplit("/v1/", 1)[0]
            recorded = sum(httpx.get(f"{proxy}/sessions/{k}").json()["n_turns"] for k in targets[name][1])
            if recorded != answered[name]:
                raise SystemExit(f"{name}: {answered[name]} calls answered, {recorded} recorded")
    finally:
        for child in children:
            child.terminate()
            child.wait(15)
    print(
        f"{args.concurrency} in flight, {args.seconds:g} s x {args.rounds} rounds, {args.tokens} tokens a "
        f"reply; load {loadavg()}; every answered call recorded"
    )
    rows = [[name, f"{median(r):.0f}", " ".join(f"{x:.0f}" for x in r)] for name, r in rates.items()]
    print(table(["target", "calls/s p50", "rounds"], rows))
    print(f"ours / upstream: {median(rates['ours']) / median(rates['upstream']):.2f}x")


if __name__ == "__main__":
    main()
