"""Browser env: reset and step latency against the same Playwright calls made directly.

In one run, alternating blocks (same minute on the machine, so the ratio is fair):

* env: ``openenv serve envs/browser_env`` in a child process, driven by the sync
  ``EnvClient`` (the real stack: WebSocket, session, env, Playwright, Chromium);
* direct: this process drives its own Chromium with Playwright's async API and makes
  the calls one env step makes: the action, then the page read (``snapshot.js``:
  accessibility text, title, URL and the task's score in one ``evaluate``).

Workload: MiniWoB ``click-checkboxes`` (seed 1); a step clicks one checkbox (the
episode never ends); a reset loads the task page with a new seed. Also: what a PNG
screenshot adds to a step, and sessions per GiB (PSS of the server and all its
children, Chromium included, for N open sessions minus one).

Then ``_browser_designs``: the async design against one sync-API thread per session.

    .venv/bin/python bench/bench_browser.py            # about 2-3 minutes
    .venv/bin/python bench/bench_browser.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import _browser_designs
import psutil
from _util import (
    HOST,
    ROOT,
    Server,
    cpu_seconds,
    fmt,
    free_port,
    machine,
    median,
    paired_ratio,
    pct,
    spread,
    stop_all,
    table,
)
from browser_env import MODELS, ClickAction, NoopAction, _page, _tasks
from browser_env._config import BrowserConfig
from browser_env._host import BrowserHost

from openenv import EnvClient

TASK = "click-checkboxes"
CHECKBOX = 3  # the first checkbox of click-checkboxes: clicking it toggles, never ends


class Direct:
    """The same Playwright calls an env step makes, without server, session or env."""

    def __init__(self) -> None:
        # The loop the server runs (uvloop when installed): the comparison is of the calls.
        try:
            import uvloop

            self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        except ImportError:
            self.loop = asyncio.new_event_loop()
        self.host = BrowserHost(BrowserConfig())
        self.page: Any = None

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def start(self) -> None:
        async def go() -> None:
            await self.host.__aenter__()
            context = await self.host.new_context()
            self.page = await context.new_page()

        self.run(go())

    async def _reset(self, seed: int) -> None:
        await self.page.goto(self.host.origin + f"/miniwob/{TASK}.html")
        await self.page.evaluate(_tasks.START_JS, [seed, 600_000])
        await _page.read(self.page, None, _tasks.EXCLUDE_SELECTOR, _tasks.SCORE_JS)

    async def _step(self, screenshot: bool) -> None:
        await self.page.locator(f'[data-oe-id="{CHECKBOX}"]').first.click()
        await _page.read(self.page, None, _tasks.EXCLUDE_SELECTOR, _tasks.SCORE_JS)
        if screenshot:
            await self.page.screenshot(type="png")

    def resets(self, n: int, seed0: int) -> list[float]:
        return self.run(_timed(lambda i: self._reset(seed0 + i), n))  # type: ignore[no-any-return]

    def steps(self, n: int, screenshot: bool = False) -> list[float]:
        return self.run(_timed(lambda i: self._step(screenshot), n))  # type: ignore[no-any-return]

    def in_process(self, n: int) -> dict[str, list[float]]:
        """``BrowserEnv.step`` and the bare calls, alternating step by step on one page."""

        async def go() -> dict[str, list[float]]:
            from browser_env import BrowserAction, BrowserEnv

            env = BrowserEnv(resources=self.host)
            await env.reset(seed=1, options={"task_id": TASK, "max_steps": 10_000})
            saved, self.page = self.page, env._page
            action = BrowserAction(ClickAction(id=CHECKBOX))
            out: dict[str, list[float]] = {"env": [], "direct": []}
            try:
                for i in range(n):
                    # Each side toggles the checkbox: swap the order so each checks and unchecks.
                    for who in ("env", "direct") if i % 2 == 0 else ("direct", "env"):
                        t0 = time.perf_counter()
                        await (env.step(action) if who == "env" else self._step(False))
                        out[who].append(time.perf_counter() - t0)
            finally:
                self.page = saved
                await env.close()
            return out

        return self.run(go())  # type: ignore[no-any-return]

    def close(self) -> None:
        self.run(self.host.aclose())
        self.loop.close()


async def _timed(make: Any, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await make(i)
        out.append(time.perf_counter() - t0)
    return out


def _env_resets(env: EnvClient, n: int, seed0: int, screenshot: bool = False) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        env.reset(seed=seed0 + i, task_id=TASK, screenshot=screenshot, max_steps=10_000)
        out.append(time.perf_counter() - t0)
    return out


def _env_steps(env: EnvClient, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        result = env.step(ClickAction(id=CHECKBOX))
        out.append(time.perf_counter() - t0)
        assert result.observation.last_action_error is None, result.observation.last_action_error
    return out


def browser_server(port: int) -> Server:
    argv = [sys.executable, "-m", "openenv", "serve", str(ROOT / "envs" / "browser_env")]
    argv += ["--host", HOST, "--port", str(port), "--no-web", "--idle-timeout", "0"]
    return Server("browser", argv, port, env={"OPENENV_LOG_LEVEL": "warning"})


def tree_pss_mib(pid: int) -> float:
    """PSS of a process and all its descendants (shared pages counted once overall)."""
    total = 0
    root = psutil.Process(pid)
    for p in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_full_info().pss
    return total / 2**20


def latency(args: argparse.Namespace, server: Server, direct: Direct) -> dict[str, Any]:
    """Interleaved blocks (rotating order) of: env steps, direct steps, the same two with a
    screenshot, env resets, direct resets. Per-block medians; ratios paired by block."""
    kinds = ("env", "direct", "env_shot", "direct_shot")
    steps: dict[str, list[float]] = {k: [] for k in kinds}
    blocks: dict[str, list[float]] = {k: [] for k in (*kinds, "env_reset", "direct_reset")}
    with EnvClient(server.base, MODELS) as env, EnvClient(server.base, MODELS) as env_shot:
        env.reset(seed=1, task_id=TASK, max_steps=10_000)
        env_shot.reset(seed=1, task_id=TASK, screenshot=True, max_steps=10_000)
        png = env_shot.step(NoopAction()).observation.screenshot or b""
        direct.run(direct._reset(1))
        run = {
            "env": lambda: _env_steps(env, args.steps),
            "direct": lambda: direct.steps(args.steps),
            "env_shot": lambda: _env_steps(env_shot, args.steps),
            "direct_shot": lambda: direct.steps(args.steps, screenshot=True),
        }
        for kind in kinds:  # warm-up
            run[kind]()
        cpu: dict[str, float] = {"env": 0.0, "direct": 0.0}
        for b in range(args.blocks):
            for kind in kinds[b % 4 :] + kinds[: b % 4]:
                # Python CPU of the side doing the work: the server process, or this one.
                c0 = cpu_seconds(server.pid) if kind == "env" else time.process_time()
                lat = run[kind]()
                c1 = cpu_seconds(server.pid) if kind == "env" else time.process_time()
                if kind in cpu:
                    cpu[kind] += c1 - c0
                steps[kind] += lat
                blocks[kind].append(median(lat))
            for who in ("env", "direct") if b % 2 == 0 else ("direct", "env"):
                if who == "env":
                    lat = _env_resets(env, args.resets, 100 * b)
                    env.reset(seed=1, task_id=TASK, max_steps=10_000)
                else:
                    lat = direct.resets(args.resets, 100 * b)
                    direct.run(direct._reset(1))
                blocks[f"{who}_reset"].append(median(lat))
    ratios = [e / d for e, d in zip(blocks["env"], blocks["direct"], strict=True)]
    inproc = direct.in_process(args.blocks * args.steps)
    n_steps = args.blocks * args.steps
    return {
        "env_cpu_ms_per_step": cpu["env"] / n_steps * 1e3,
        "direct_cpu_ms_per_step": cpu["direct"] / n_steps * 1e3,
        "in_process_ratio": median(inproc["env"]) / median(inproc["direct"]),
        "in_process_env_ms": median(inproc["env"]) * 1e3,
        "in_process_direct_ms": median(inproc["direct"]) * 1e3,
        "blocks": blocks,
        "step_ratio": paired_ratio(blocks["env"], blocks["direct"]),
        "step_ratio_spread": spread(ratios),
        "reset_ratio": paired_ratio(blocks["env_reset"], blocks["direct_reset"]),
        "env_step_p50_ms": median(steps["env"]) * 1e3,
        "env_step_p99_ms": pct(steps["env"], 99) * 1e3,
        "direct_step_p50_ms": median(steps["direct"]) * 1e3,
        "env_reset_p50_ms": median(blocks["env_reset"]) * 1e3,
        "direct_reset_p50_ms": median(blocks["direct_reset"]) * 1e3,
        "env_screenshot_ms": median(a - b for a, b in zip(blocks["env_shot"], blocks["env"], strict=True))
        * 1e3,
        "direct_screenshot_ms": median(
            a - b for a, b in zip(blocks["direct_shot"], blocks["direct"], strict=True)
        )
        * 1e3,
        "png_bytes": len(png),
    }


def memory(args: argparse.Namespace) -> dict[str, Any]:
    """PSS of a fresh server tree with 1 session, then with N: sessions per GiB."""
    server = browser_server(free_port()).start()
    try:
        server.wait_ready()
        clients = []
        try:
            for i in range(args.sessions):
                client = EnvClient(server.base, MODELS).connect()
                clients.append(client)
                client.reset(seed=i, task_id=TASK)
                if i == 0:
                    time.sleep(0.5)
                    one = tree_pss_mib(server.pid)
            time.sleep(0.5)
            many = tree_pss_mib(server.pid)
        finally:
            for client in clients:
                client.close()
    finally:
        server.stop()
    per_session = (many - one) / (args.sessions - 1)
    return {
        "pss_1_session_mib": one,
        f"pss_{args.sessions}_sessions_mib": many,
        "mib_per_session": per_session,
        "sessions_per_gib": 1024 / per_session if per_session > 0 else float("nan"),
    }


def report(res: dict[str, Any], n: int) -> str:
    lat, mem = res["latency"], res["memory"]
    rows = [
        [
            "step latency, env / direct Playwright (paired blocks)",
            f"{lat['step_ratio']:.2f}x",
            f"env p50 {fmt(lat['env_step_p50_ms'], 1)} ms (p99 {fmt(lat['env_step_p99_ms'], 1)}), direct p50 "
            f"{fmt(lat['direct_step_p50_ms'], 1)} ms; blocks {lat['step_ratio_spread']}",
            "<= 1.10x",
            "yes" if lat["step_ratio"] <= 1.10 else "no",
        ],
        [
            "Python CPU per step: server process / direct Playwright process",
            f"{lat['env_cpu_ms_per_step'] / lat['direct_cpu_ms_per_step']:.2f}x",
            f"server {fmt(lat['env_cpu_ms_per_step'], 2)} ms (WebSocket, session, env, Playwright client), "
            f"direct {fmt(lat['direct_cpu_ms_per_step'], 2)} ms",
            "-",
            "-",
        ],
        [
            "step latency in-process, BrowserEnv.step / direct (same page, alternating)",
            f"{lat['in_process_ratio']:.2f}x",
            f"env {fmt(lat['in_process_env_ms'], 1)} ms, direct {fmt(lat['in_process_direct_ms'], 1)} ms",
            "-",
            "-",
        ],
        [
            "reset latency, env / direct Playwright",
            f"{lat['reset_ratio']:.2f}x",
            f"env {fmt(lat['env_reset_p50_ms'], 1)} ms, direct {fmt(lat['direct_reset_p50_ms'], 1)} ms",
            "-",
            "-",
        ],
        [
            "PNG screenshot added to a step",
            f"{fmt(lat['env_screenshot_ms'], 1)} ms",
            f"direct page.screenshot {fmt(lat['direct_screenshot_ms'], 1)} ms; "
            f"{lat['png_bytes']:,} bytes (800x600)",
            "-",
            "-",
        ],
        [
            "memory per session (PSS, server + Chromium)",
            f"{fmt(mem['mib_per_session'], 1)} MiB",
            f"{fmt(mem['pss_1_session_mib'])} MiB with 1 session, "
            f"{fmt(mem[f'pss_{n}_sessions_mib'])} MiB with {n}",
            "-",
            "-",
        ],
        ["sessions per GiB", fmt(mem["sessions_per_gib"], 1), "", "-", "-"],
    ]
    return table(["figure", "ours", "detail", "target", "met"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="4 blocks of 5 steps, 4 sessions")
    parser.add_argument("--designs", default="1,4", help="N for the thread-design comparison; '' skips")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.blocks, args.steps, args.resets, args.sessions = 4, 5, 2, 4
    res: dict[str, Any] = {"machine": machine(), "args": vars(args) | {"out": str(args.out)}}
    t0 = time.perf_counter()
    server = browser_server(free_port()).start()
    direct = Direct()
    try:
        server.wait_ready()
        direct.start()
        res["latency"] = latency(args, server, direct)
    finally:
        direct.close()
        server.stop()
    res["memory"] = memory(args)
    if args.designs:
        ns = tuple(int(n) for n in args.designs.split(","))
        res["designs"] = _browser_designs.compare(ns, args.steps)
    res["wall_s"] = time.perf_counter() - t0
    res["machine"]["loadavg_at_end"] = machine()["loadavg_at_start"]
    print(report(res, args.sessions))
    if "designs" in res:
        rows = [
            [k, fmt(v["step_p50_ms"], 1), fmt(v["steps_per_s"], 1), fmt(v["pss_mib"])]
            for k, v in res["designs"].items()
        ]
        print(
            "\n" + table(["design, N sessions stepping at once", "step p50 ms", "steps/s", "PSS MiB"], rows)
        )
    print(
        f"\nwall {res['wall_s']:.0f} s; load {res['machine']['loadavg_at_start']} -> "
        f"{res['machine']['loadavg_at_end']}; commit {res['machine'].get('commit', '?')}"
    )
    if args.out:
        args.out.write_text(json.dumps(res, indent=2, default=str))


if __name__ == "__main__":
    try:
        main()
    finally:
        stop_all()
