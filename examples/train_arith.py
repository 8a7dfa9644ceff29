"""Train the ``tiny`` model with GRPO against ``envs/arith_env`` served over the protocol.

    python examples/train_arith.py [--steps 100] [--digits 1] [--ops +] [--workers 0] [--out runs/arith]

Serves ``ArithEnv`` on a free loopback port with server-side default options (one-digit
sums, partial credit so a random model gets a signal), trains for ``--steps`` steps,
prints the mean reward every 10 steps and draws ``OUT/reward.png``.
Needs the env installed (``pip install -e envs/arith_env``; ``scripts/setup.sh`` does it).
"""

from __future__ import annotations

import argparse

from arith_env import ArithEnv

from openenv.server import create_app, serve_in_background
from openenv.train import TrainConfig, dr_grpo_advantages, plot_rewards, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--digits", type=int, default=1)
    parser.add_argument("--ops", default="+")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--out", default="runs/arith")
    args = parser.parse_args()
    defaults = {"digits": args.digits, "ops": args.ops, "partial_credit": True}
    server = serve_in_background(create_app(ArithEnv, env_kwargs=defaults))
    url = server.url
    try:
        cfg = TrainConfig(
            env=[url],
            model="tiny",
            steps=args.steps,
            group_size=8,
            prompts_per_step=16,
            max_turns=1,
            max_new_tokens=args.digits + 1,  # the longest sum of two d-digit numbers
            lr=3e-3,
            advantage=dr_grpo_advantages,
            workers=args.workers,
            out=args.out,
            progress=False,
        )
        rows = train(cfg)
    finally:
        server.stop()
    for row in rows[::10] + rows[-1:]:
        print(f"step {row['step']:4d}  reward_mean {row['reward_mean']:.3f}  entropy {row['entropy']:.2f}")
    print("plot:", plot_rewards(args.out))


if __name__ == "__main__":
    main()
