"""Drive one episode of the echo env: reset, a few steps, state.

openenv serve envs/echo_env --port 8000 &
python examples/echo_episode.py --url http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse

from echo_env import MODELS, EchoAction

from openenv import EnvClient
from openenv.containers import wait_healthy


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--wait", type=float, default=0, help="seconds to wait for the server")
    args = parser.parse_args()
    if args.wait:
        wait_healthy(args.url, timeout_s=args.wait)  # openenv's own wait, as its providers use

    with EnvClient(args.url, MODELS) as env:
        result = env.reset(seed=0, max_steps=3)
        print(f"reset -> {result.observation.echoed_message!r}")
        for word in ["hello", "from", "openenv"]:
            result = env.step(EchoAction(message=word))
            print(
                f"step {word!r:10} -> echoed={result.observation.echoed_message!r} "
                f"reward={result.reward:.1f} terminated={result.terminated} truncated={result.truncated}"
            )
            if result.done:
                break
        state = env.state()
        print(f"state -> episode {state.episode_id}, {state.step_count} steps, {state.total_chars} chars")


if __name__ == "__main__":
    main()
