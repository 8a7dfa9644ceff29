"""``openenv eval`` with 512 episodes in flight against one OpenAI-compatible server.

Two child processes on 127.0.0.1: the echo env (``openenv serve echo``, no per-client
quota) and one model server, ``openenv policy serve`` over a randomly initialised Llama
checkpoint written here (``random_hf_model``: 2,048 positions, a character tokenizer;
nothing downloaded). Then, alternating in the same run:

* ``bare SDK``: the baseline. ``--episodes`` times ``--turns`` chat requests through one
  ``openai.AsyncOpenAI`` client (the official SDK, as the policy uses it), at most
  ``--inflight`` at once, each the same kind of chat the policy sends;
* ``openenv eval``: ``run_eval_async`` with the ``openai:`` policy (the same SDK, one
  client), ``--episodes`` episodes of ``--turns`` turns at concurrency ``--inflight``:
  every episode a session of the env server and a conversation with the model server.

What is checked, per round: every episode done (no error, no retry: a dropped or
refused connection to either server would be retried and counted, so "0 retries, 0
errors" is "no connection dropped"); the most model requests in flight at once (counted
around the SDK call); every reply 200. The figure is the eval's wall over the bare SDK's
(median of per-round ratios) and the peak in flight.

    .venv/bin/python bench/bench_eval_inflight.py [--episodes 512] [--inflight 512] [--turns 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import (
    ROOT,
    Server,
    free_port,
    loadavg,
    machine,
    median,
    ours_server,
    raise_nofile,
    stop_all,
    table,
)
from openenv.eval import EvalConfig, run_eval_async
from openenv.policy import OpenAIPolicy

SYSTEM = "Echo."  # a short system prompt: the model's work stays small beside the traffic


class Gauge:
    """Requests in flight now and at most."""

    def __init__(self) -> None:
        self.now = self.peak = self.calls = 0

    def enter(self) -> None:
        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        self.now -= 1


class CountingPolicy(OpenAIPolicy):
    """The ``openai:`` policy, its requests counted in flight."""

    gauge = Gauge()

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        self.gauge.enter()
        try:
            return await super().complete(messages, tools)
        finally:
            self.gauge.leave()


def model_server(port: int, checkpoint: Path) -> Server:
    script = Path(sys.executable).parent / "openenv"
    argv = [str(script), "policy", "serve", str(checkpoint), "--host", "127.0.0.1", "--port", str(port)]
    return Server("policy serve", argv, port, cwd=ROOT)


async def wait_http(url: str, timeout_s: float = 120.0) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                if (await client.get(url, timeout=2.0)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise TimeoutError(f"{url} did not answer in {timeout_s:g} s")


async def bare(base: str, episodes: int, turns: int, inflight: int, max_tokens: int) -> dict[str, Any]:
    import openai

    gauge, failures = Gauge(), 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(episodes):
        queue.put_nowait(i)
    client = openai.AsyncOpenAI(base_url=base, api_key="none", max_retries=0, timeout=600)

    async def worker() -> None:
        nonlocal failures
        while not queue.empty():
            i = queue.get_nowait()
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f'{{"seed": {i}}}'},
            ]
            for _ in range(turns):
                gauge.enter()
                try:
                    reply = await client.chat.completions.create(
                        model="m", messages=messages, max_tokens=max_tokens, temperature=1.0
                    )
                except openai.APIError:
                    failures += 1
                    break
                finally:
                    gauge.leave()
                messages += [{"role": "assistant", "content": reply.choices[0].message.content or ""},
                             {"role": "user", "content": "{}"}]  # fmt: skip

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    wall = time.perf_counter() - t0
    await client.close()
    return {"wall_s": wall, "peak_inflight": gauge.peak, "requests": gauge.calls, "failures": failures}


async def harness(
    env_url: str, base: str, episodes: int, turns: int, inflight: int, max_tokens: int
) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="bench-eval-inflight-"))
    CountingPolicy.gauge = Gauge()
    policy = CountingPolicy("m", base_url=base, max_tokens=max_tokens, system=SYSTEM, timeout_s=600)
    try:
        cfg = EvalConfig(env=env_url, policy=policy, out=out, count=episodes, max_turns=turns,
                         concurrency=inflight, episode_timeout_s=900, retries=3)  # fmt: skip
        t0 = time.perf_counter()
        results = await run_eval_async(cfg)
        wall = time.perf_counter() - t0
        return {
            "wall_s": wall,
            "peak_inflight": CountingPolicy.gauge.peak,
            "requests": CountingPolicy.gauge.calls,
            "episodes": results["episodes"],
            "errors": results["errors"],
            "error_kinds": results["error_kinds"],
            "retries": results["retries"],
            "timeouts": results["timeouts"],
        }
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=512)
    p.add_argument("--inflight", type=int, default=512)
    p.add_argument("--turns", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="also write the rounds as JSON here")
    args = p.parse_args()
    raise_nofile()
    from openenv.train import random_hf_model

    tmp = Path(tempfile.mkdtemp(prefix="bench-eval-model-"))
    env = ours_server(free_port(), max_sessions=args.inflight + 64)
    llm = model_server(free_port(), random_hf_model(tmp / "llama"))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = loadavg()
    try:
        env.start()
        llm.start()
        env.wait_ready()
        base = f"{llm.base}/v1"
        asyncio.run(wait_http(f"{llm.base}/health"))
        asyncio.run(bare(base, 16, 1, 16, args.max_tokens))  # warm-up, not counted
        rounds: list[dict[str, Any]] = []
        for r in range(args.rounds):
            order = ["bare SDK", "openenv eval"] if r % 2 == 0 else ["openenv eval", "bare SDK"]
            row: dict[str, Any] = {}
            for name in order:
                if name == "bare SDK":
                    row[name] = asyncio.run(
                        bare(base, args.episodes, args.turns, args.inflight, args.max_tokens)
                    )
                else:
                    row[name] = asyncio.run(
                        harness(env.base, base, args.episodes, args.turns, args.inflight, args.max_tokens)
                    )
            rounds.append(row)
            print(f"round {r + 1}: {json.dumps(row)}", file=sys.stderr)
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)
    report(rounds, args, started, load_start)


def report(rounds: list[dict[str, Any]], args: argparse.Namespace, started: str, load_start: str) -> None:
    ev = [r["openenv eval"] for r in rounds]
    sdk = [r["bare SDK"] for r in rounds]
    ratios = [e["wall_s"] / b["wall_s"] for e, b in zip(ev, sdk, strict=True)]
    clean = all(e["errors"] == 0 and e["retries"] == 0 and e["episodes"] == args.episodes for e in ev)
    print(
        f"echo env + openenv policy serve (random Llama, CPU), {args.episodes} episodes "
        f"of {args.turns} turns, "
        f"{args.inflight} in flight, max_tokens {args.max_tokens}, {args.rounds} rounds; {started}; "
        f"load {load_start} at start, {loadavg()} at end"
    )
    rows = [
        ["bare SDK", f"{median([s['wall_s'] for s in sdk]):.2f}", max(s["peak_inflight"] for s in sdk),
         sum(s["requests"] for s in sdk), sum(s["failures"] for s in sdk), "-"],
        ["openenv eval", f"{median([e['wall_s'] for e in ev]):.2f}", max(e["peak_inflight"] for e in ev),
         sum(e["requests"] for e in ev), sum(e["errors"] for e in ev), sum(e["retries"] for e in ev)],
    ]  # fmt: skip
    print(
        table(["mode", "wall s (median)", "peak requests in flight", "requests", "errors", "retries"], rows)
    )
    print()
    print(
        table(
            ["figure", "value"],
            [
                ["openenv eval wall / bare SDK wall (median of rounds)", f"{median(ratios):.2f}x"],
                ["per-round ratios", ", ".join(f"{x:.2f}" for x in ratios)],
                ["peak model requests in flight (eval)", str(min(e["peak_inflight"] for e in ev))],
                ["no dropped connection (0 errors, 0 retries, every episode done)", "yes" if clean else "NO"],
            ],
        )
    )
    if args.out:
        record = {"args": vars(args), "rounds": rounds, "started": started, "load_start": load_start,
                  "load_end": loadavg(), "machine": machine()}  # fmt: skip
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(record, indent=2))
    if not clean:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
