"""The raw baseline: an echo env served by the ``websockets`` library alone.

No framework, no validation: one asyncio server answering upstream's frames
(``{"type": "reset"|"step", "data": ...}``) with observation frames, stdlib json,
compression off. It bounds what any Python WebSocket server can do on this machine,
so our figures are quoted as ratios to it, measured in the same run.

    python bench/baselines/raw_ws.py --port 8123 [--max-seconds 1800]

Binds 127.0.0.1 only; exits by itself after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import threading
import time
from typing import Any


def answer(frame: dict[str, Any], steps: list[int]) -> dict[str, Any]:
    """The observation frame for one request; ``steps`` is the connection's step count."""
    if frame.get("type") == "reset":
        steps[0] = 0
        observation = {"echoed_message": "ready", "message_length": 0, "step_count": 0}
        reward = 0.0
    else:
        steps[0] += 1
        message = frame["data"]["message"]
        observation = {"echoed_message": message, "message_length": len(message), "step_count": steps[0]}
        reward = len(message) * 0.1
    return {"type": "observation", "data": {"observation": observation, "reward": reward, "done": False}}


def exit_after(seconds: float) -> None:
    """A watchdog: the process ends after ``seconds`` whatever its parent does."""

    def watchdog() -> None:
        time.sleep(seconds)
        os._exit(3)

    threading.Thread(target=watchdog, name="exit-after", daemon=True).start()


def serve(port: int) -> None:
    from websockets.asyncio.server import ServerConnection, serve

    async def connection(ws: ServerConnection) -> None:
        steps = [0]
        async for raw in ws:
            await ws.send(json.dumps(answer(json.loads(raw), steps)))

    async def main() -> None:
        async with serve(connection, "127.0.0.1", port, compression=None, max_size=2**24):
            await asyncio.Future()  # until killed

    asyncio.run(main())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-seconds", type=float, default=1800)
    args = parser.parse_args()
    exit_after(args.max_seconds)
    serve(args.port)
