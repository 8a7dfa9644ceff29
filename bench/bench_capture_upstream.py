"""Capture proxy throughput, ours against upstream OpenEnv 0.10's, same backend, same run.

Three child processes on 127.0.0.1: the vLLM-shaped backend of bench_capture.py (a fixed
reply of ``--tokens`` token ids with logprobs and ``prompt_token_ids``, no decode delay),
``openenv capture serve`` (this tree, .venv) and upstream's
``python -m openenv.core.harness.capture.server`` (.venv-upstream, started outside this
tree), both at level ``tokens`` in front of the same backend. A client (aiohttp, one
connection pool per target, kept warm for the whole run) keeps N non-streaming chat
completions in flight, each worker on its own session, for one short window.

Built for a loaded, noisy host: each round is a pair of adjacent windows, ours and
upstream's (the order swapped every round), then one window of the backend alone. The
figure is each round's ours / upstream ratio, reported as the median of the rounds'
ratios with quartiles and range (the host's swings between rounds cancel inside a pair),
and the backend alone over the same rounds. Several in-flight levels (``--concurrency
16,64``) run one after the other. Every call a proxy answered 200 must be in its sessions
(checked at the end).

    .venv/bin/python bench/bench_capture_upstream.py [--concurrency 16,64] [--seconds 1] [--rounds 12]
    .venv/bin/python bench/bench_capture_upstream.py --profile-ours /tmp/ours.prof  # cProfile of ours
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._util import free_port, loadavg, median, pct, table  # noqa: E402
from bench.bench_capture import BODY, start_proxy, wait_up  # noqa: E402

UPSTREAM_PY = ROOT / ".venv-upstream" / "bin" / "python"
PROXIES = ("ours", "upstream")


def start_upstream(backend: str, port: int) -> subprocess.Popen[bytes]:
    argv = [str(UPSTREAM_PY), "-m", "openenv.core.harness.capture.server", "--llm-url", backend]
    argv += ["--port", str(port), "--capture-level", "tokens"]
    return subprocess.Popen(argv, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# cProfile sees only the thread that enables it, and the proxy serves on a thread of its
# own: each thread of the child gets a profile, dumped to OUT.<ident> when it ends.
_PROFILED = """
import cProfile, runpy, sys, threading
out = sys.argv.pop(1)
_run = threading.Thread.run
def run(self):
    prof = cProfile.Profile()
    prof.enable()
    try:
        _run(self)
    finally:
        prof.disable()
        prof.dump_stats(f"{out}.{self.ident}")
threading.Thread.run = run
sys.argv[0] = "openenv"
runpy.run_module("openenv", run_name="__main__", alter_sys=True)
"""


def start_ours_profiled(backend: str, port: int, out: str) -> subprocess.Popen[bytes]:
    """Ours with each thread under cProfile (merged into ``out`` by ``merge_profiles``)."""
    argv = [sys.executable, "-c", _PROFILED, out, "capture", "serve"]
    argv += ["--llm-url", backend, "--port", str(port), "--capture-level", "tokens"]
    return subprocess.Popen(argv, cwd=ROOT)


def merge_profiles(out: str) -> None:
    import pstats

    parts = sorted(Path(out).parent.glob(Path(out).name + ".*"))
    if not parts:
        raise SystemExit(f"no thread profiles at {out}.*")
    stats = pstats.Stats(*map(str, parts))
    stats.dump_stats(out)
    for part in parts:
        part.unlink()
    stats.sort_stats("tottime").print_stats(15)


async def window(session: Any, url: str, keys: list[str], seconds: float) -> tuple[int, int]:
    """(calls answered 200, other answers) with one worker per key for ``seconds``."""
    done = failed = 0
    deadline = time.monotonic() + seconds

    async def worker(key: str) -> None:
        nonlocal done, failed
        headers = {"authorization": f"Bearer {key}"} if key else {}
        while time.monotonic() < deadline:
            async with session.post(url, json=BODY, headers=headers) as reply:
                await reply.read()
                if reply.status == 200:
                    done += 1
                else:
                    failed += 1

    await asyncio.gather(*(worker(k) for k in keys))
    return done, failed


async def measure(
    targets: dict[str, tuple[str, list[str]]], levels: list[int], seconds: float, rounds: int
) -> tuple[dict[int, dict[str, list[float]]], dict[str, int]]:
    """Per level, per target, the rate of each round's window; and calls answered per target."""
    import aiohttp

    rates: dict[int, dict[str, list[float]]] = {}
    answered = dict.fromkeys(targets, 0)
    conn = aiohttp.TCPConnector(limit=0, limit_per_host=0)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:

        async def run(name: str, n: int, secs: float) -> float:
            url, keys = targets[name]
            ok, bad = await window(session, url, keys[:n], secs)
            if bad:
                raise SystemExit(f"{name}: {bad} calls failed")
            answered[name] += ok
            return ok / secs

        for n in levels:
            for name in targets:  # warm this level's connections
                await run(name, n, min(seconds, 0.5))
            rates[n] = {name: [] for name in targets}
            for r in range(rounds):
                for name in (*(PROXIES if r % 2 == 0 else PROXIES[::-1]), "direct"):
                    rates[n][name].append(await run(name, n, seconds))
    return rates, answered


def report(n: int, rates: dict[str, list[float]]) -> list[str]:
    ratios = sorted(o / u for o, u in zip(rates["ours"], rates["upstream"], strict=True) if u)
    over = sum(1 for x in ratios if x >= 2)
    return [
        str(n),
        f"{median(rates['ours']):.0f} ({min(rates['ours']):.0f}-{max(rates['ours']):.0f})",
        f"{median(rates['upstream']):.0f} ({min(rates['upstream']):.0f}-{max(rates['upstream']):.0f})",
        f"{median(rates['direct']):.0f} ({min(rates['direct']):.0f}-{max(rates['direct']):.0f})",
        f"{median(ratios):.2f}x",
        f"{pct(ratios, 25):.2f}-{pct(ratios, 75):.2f}",
        f"{ratios[0]:.2f}-{ratios[-1]:.2f}",
        f"{over}/{len(ratios)}",
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", default="16,64", help="in-flight levels, comma-separated")
    p.add_argument("--seconds", type=float, default=1.0, help="one window")
    p.add_argument("--rounds", type=int, default=12, help="pairs (ours, upstream) + backend alone, per level")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--profile-ours", metavar="PATH", help="run ours under cProfile, stats to PATH")
    args = p.parse_args()
    levels = [int(x) for x in str(args.concurrency).split(",") if x.strip()]
    if not levels or min(levels) < 1:
        raise SystemExit("--concurrency: one or more positive integers, comma-separated")
    if not UPSTREAM_PY.exists():
        raise SystemExit(f"{UPSTREAM_PY} is missing: upstream OpenEnv 0.10 is the baseline")
    top = max(levels)
    bport = free_port()
    bench_capture = str(ROOT / "bench" / "bench_capture.py")
    children = [
        subprocess.Popen(
            [sys.executable, bench_capture, "--backend-child", str(bport), str(args.tokens), "0"]
        )
    ]
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load_before = loadavg()
    try:
        backend = f"http://127.0.0.1:{bport}/v1"
        wait_up(backend + "/chat/completions", children[0])
        targets: dict[str, tuple[str, list[str]]] = {"direct": (backend + "/chat/completions", [""] * top)}
        for name in PROXIES:
            port = free_port()
            if name == "upstream":
                children.append(start_upstream(backend, port))
            elif args.profile_ours:
                children.append(start_ours_profiled(backend, port, args.profile_ours))
            else:
                children.append(start_proxy(backend, port, None))
            proxy = f"http://127.0.0.1:{port}"
            wait_up(proxy + "/health", children[-1])
            keys = [httpx.post(proxy + "/sessions", json={}).json()["session_id"] for _ in range(top)]
            targets[name] = (proxy + "/v1/chat/completions", keys)
        rates, answered = asyncio.run(measure(targets, levels, args.seconds, args.rounds))
        for name in PROXIES:
            proxy = targets[name][0].rsplit("/v1/", 1)[0]
            recorded = sum(httpx.get(f"{proxy}/sessions/{k}").json()["n_turns"] for k in targets[name][1])
            if recorded != answered[name]:
                raise SystemExit(f"{name}: {answered[name]} calls answered, {recorded} recorded")
    finally:
        for child in children:
            child.terminate()
            child.wait(30)
    if args.profile_ours:
        merge_profiles(args.profile_ours)
    print(
        f"{started}; {args.seconds:g} s windows, {args.rounds} rounds a level (ours and upstream adjacent, "
        f"order swapped each round, then the backend alone), {args.tokens} tokens a reply; load before "
        f"{load_before}, after {loadavg()}; every answered call recorded"
    )
    headers = ["in flight", "ours calls/s p50 (range)", "upstream", "backend alone", "ours/upstream p50"]
    rows = [report(n, rates[n]) for n in levels]
    print(table([*headers, "quartiles", "range", "rounds >= 2x"], rows))
    for n in levels:
        print(
            f"{n} in flight, ours / upstream by round: "
            + " ".join(
                f"{o / u:.2f}" for o, u in zip(rates[n]["ours"], rates[n]["upstream"], strict=True) if u
            )
        )


if __name__ == "__main__":
    main()
