"""Hold many echo sessions on one connection and step them all in one frame per step.

openenv serve envs/echo_env --port 8000 &
python examples/echo_many_sessions.py --url http://127.0.0.1:8000 --sessions 64
"""

from __future__ import annotations

import argparse
import asyncio
import time

from echo_env import MODELS, EchoAction

from openenv import AsyncEnvClient


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    keys = [f"env-{i}" for i in range(args.sessions)]
    async with AsyncEnvClient(args.url, MODELS) as client:
        await client.reset_batch(keys, seed=0)
        t0 = time.perf_counter()
        total = 0.0
        for step in range(args.steps):
            results = await client.step_batch({k: EchoAction(message=f"{k}:{step}") for k in keys})
            total += sum(r.reward or 0.0 for r in results)
        took = time.perf_counter() - t0
        print(
            f"{args.sessions} sessions x {args.steps} steps in {took:.3f} s "
            f"({args.sessions * args.steps / took:,.0f} steps/s), total reward {total:.1f}"
        )
        for k in keys:
            await client.close_session(k)


if __name__ == "__main__":
    asyncio.run(main())
