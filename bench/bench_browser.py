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
    """Alternating blocks of env and direct resets and steps; per-block medians."""
    blocks: dict[str, list[float]] = {k: [] for k in ("env_step", "direct_step", "env_reset", "direct_reset")}
    all_steps: dict[str, list[float]] = {"env_step": [], "direct_step": []}
    with EnvClient(server.base, MODELS) as env:
        env.reset(seed=1, task_id=TASK, max_steps=10_000)
        direct.run(direct._reset(1))
        _env_steps(env, 5), direct.steps(5)  # warm both
        for b in range(args.blocks):
            order = ("env", "direct") if b % 2 == 0 else ("direct", "env")
            for who in order:
                if who == "env":
                    steps = _env_steps(env, args.steps)
                    resets = _env_resets(env, args.resets, 100 * b)
                    env.reset(seed=1, task_id=TASK, max_steps=10_000)
                else:
                    steps = direct.steps(args.steps)
                    resets = direct.resets(args.resets, 100 * b)
                    direct.run(direct._reset(1))
                blocks[f"{who}_step"].append(median(steps))
                blocks[f"{who}_reset"].append(median(resets))
                all_steps[f"{who}_step"] += steps
        # Screenshots: the env's step with screenshot=True, against Playwright's screenshot call.
        env.reset(seed=1, task_id=TASK, screenshot=True, max_steps=10_000)
        shot_steps = _env_steps(env, args.steps)
        png = env.step(NoopAction()).observation.screenshot or b""
        env.reset(seed=1, task_id=TASK, max_steps=10_000)
        plain_steps = _env_steps(env, args.steps)
    direct_shot = direct.steps(args.steps, screenshot=True)
    direct_plain = direct.steps(args.steps)
    return {
        "blocks": blocks,
        "step_ratio": paired_ratio(blocks["env_step"], blocks["direct_step"]),
        "step_ratio_spread": spread(
            [e / d for e, d in zip(blocks["env_step"], blocks["direct_step"], strict=True)]
        ),
        "reset_ratio": paired_ratio(blocks["env_reset"], blocks["direct_reset"]),
        "env_step_p50_ms": median(all_steps["env_step"]) * 1e3,
        "env_step_p99_ms": pct(all_steps["env_step"], 99) * 1e3,
        "direct_step_p50_ms": median(all_steps["direct_step"]) * 1e3,
        "env_reset_p50_ms": median(blocks["env_reset"]) * 1e3,
        "direct_reset_p50_ms": median(blocks["direct_reset"]) * 1e3,
        "env_screenshot_ms": (median(shot_steps) - median(plain_steps)) * 1e3,
        "direct_screenshot_ms": (median(direct_shot) - median(direct_plain)) * 1e3,
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
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="2 blocks of 10 steps, 4 sessions")
    parser.add_argument("--designs", default="1,4", help="N for the thread-design comparison; '' skips")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.blocks, args.steps, args.resets, args.sessions = 2, 10, 2, 4
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
