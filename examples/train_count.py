"""Train the ``tiny`` model with GRPO against a text env served over the protocol.

    python examples/train_count.py [--steps 100] [--workers 2] [--out runs/count]

Serves ``CountEnv`` (say the digit after the one shown; RFC 0002: ``prompt`` in, one
string field out) on a free loopback port, trains for ``--steps`` steps (in-process
rollouts, or ``--workers`` Monarch processes), prints the reward every 10 steps and
draws ``OUT/reward.png``. 100 in-process steps use about 14 s of CPU time.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from openenv import Action, Environment, Execution, Observation, State
from openenv.server import create_app, serve_in_background
from openenv.train import TrainConfig, dr_grpo_advantages, plot_rewards, train


class Say(Action):
    message: str


class Shown(Observation):
    prompt: str = ""


class CountEnv(Environment[Say, Shown, State]):
    """The prompt is a digit; reward 1 when the answer starts with the next digit."""

    execution = Execution.INLINE

    def reset(self, *, seed: int | None = None, episode_id: str | None = None, options: Any = None) -> Shown:
        self.digit = random.Random(seed).randrange(10)  # the task is a function of the seed
        self._state = State(episode_id=episode_id)
        return Shown(prompt=str(self.digit))

    def step(self, action: Say) -> Shown:
        self._state.step_count += 1
        head = action.message[:1]
        exact = head == str((self.digit + 1) % 10)
        reward = 1.0 if exact else 0.1 if head.isdigit() else 0.0  # partial credit for a digit
        return Shown(reward=reward, done=True, metadata={"exact": exact, "digit": head.isdigit()})

    def state(self) -> State:
        return self._state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--out", default="runs/count")
    args = parser.parse_args()
    server = serve_in_background(create_app(CountEnv))
    url = server.url
    try:
        cfg = TrainConfig(
            env=[url],
            model="tiny",
            steps=args.steps,
            group_size=8,
            prompts_per_step=16,
            max_turns=1,
            max_new_tokens=1,
            lr=3e-3,
            advantage=dr_grpo_advantages,  # r - group mean: steadier than GRPO's std scaling here
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
