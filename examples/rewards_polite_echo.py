"""Rewards plugged into an unchanged env: local rubrics plus an external reward process.

    python examples/rewards_polite_echo.py

Starts a reward server in a separate process (``python -m openenv.rewards``), serves
the echo env wrapped by ``with_rubric`` on a free port, and prints each step's reward
and its breakdown as the client receives them.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from echo_env import MODELS, EchoAction, EchoEnv

from openenv import EnvClient
from openenv.rewards import EnvReward, Gate, HttpRubric, TrajectoryRubric, WeightedSum, with_rubric
from openenv.server import create_app, serve_in_background


def brevity(action: Any, observation: Any) -> float:
    """Shorter messages score higher (a reward served by another process)."""
    return max(0.0, 1.0 - len(action.message) / 40)


def polite(action: Any, observation: Any) -> float:
    return 1.0 if "please" in action.message.lower() else 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_reward_process() -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    here = Path(__file__).resolve().parent
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv.rewards", "rewards_polite_echo:brevity", "--port", str(port)],
        cwd=here,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return f"http://127.0.0.1:{port}", proc
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("the reward process did not start") from None
            time.sleep(0.05)


def main() -> None:
    reward_url, proc = start_reward_process()
    rubric = WeightedSum(
        {
            "polite": Gate(polite),  # 1.0 or nothing
            "brevity": HttpRubric(reward_url),  # scored by the other process
            "env": EnvReward(),  # the echo env's own reward (0.1 per character)
            "episode": TrajectoryRubric(lambda trajectory: float(len(trajectory))),  # paid at the end
        },
        weights={"polite": 1.0, "brevity": 0.5, "env": 0.1, "episode": 0.25},
    )
    server = serve_in_background(create_app(with_rubric(EchoEnv, rubric)))
    url = server.url
    try:
        with EnvClient(url, MODELS) as env:
            env.reset(max_steps=3)
            for message in ["hello", "please help", "a rather long message without manners"]:
                result = env.step(EchoAction(message=message))
                parts = ", ".join(f"{k}={v:.2f}" for k, v in result.metadata["reward_breakdown"].items())
                print(f"{message!r:40} reward {result.reward:.3f}  ({parts})  done={result.done}")
    finally:
        server.stop()
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
