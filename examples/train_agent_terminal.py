"""Train a small model on the runs of a loop-owning agent in the terminal env (CPU).

    python examples/train_agent_terminal.py --steps 60 --out runs/agent

What runs, all in this process: the terminal env server on a family of tasks
(``name_file_tasks``: "create an empty file named X", scored by the task's verifier);
the model being trained behind ``openenv policy serve``'s app (``ServedPolicy``); the
capture proxy in front of it; and, each step, ``--group-size`` runs of
``SimpleShellAgent`` per task, each through its own capture session. ``train_agent``
trains on the captured token ids and logprobs and pushes the new weights to the served
model after each step. The model is a small random Llama first fine-tuned to answer
one of ``touch``, ``mkdir``, ``rm`` and a letter, both drawn blindly (``command_prior``:
the form of a command, nothing about the task). The task's two checks give ``touch X``
1, ``touch`` with another letter 0.5, the other verbs 0; the curve and what was and was
not learned are in docs/train.md. ``DIR/train/reward.png`` is the curve.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import torch
from terminal_env import TerminalEnv

from openenv.agentrl import command_prior, name_file_tasks, train_agent
from openenv.server import create_app, serve_in_background
from openenv.train import TrainConfig, plot_rewards

#: The prior's verbs: only ``touch`` makes a file (``rm`` of a missing file fails).
VERBS = ("touch", "mkdir", "rm")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--letters", default="abcd", help="one task per letter")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--advantage", default="grpo", choices=("grpo", "dr_grpo", "rloo"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy machine)")
    p.add_argument("--out", default="runs/agent")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    tasks = name_file_tasks(out / "tasks", args.letters)
    t0 = time.perf_counter()
    model = command_prior(
        out / "prior",
        [f"create an empty file named {c}." for c in args.letters],
        [f"{verb} {c}" for verb in VERBS for c in args.letters],
        seed=args.seed,
    )
    print(f"prior: {time.perf_counter() - t0:.1f} s")
    env_app = create_app(TerminalEnv, env_kwargs={"tasks_dir": str(out / "tasks"), "pool_size": 32})
    with serve_in_background(env_app) as env:
        cfg = TrainConfig.from_dict(
            {
                "env": [env.url],
                "model": str(model),
                "steps": args.steps,
                "group_size": args.group_size,
                "prompts_per_step": len(tasks),
                "max_turns": 1,
                "max_new_tokens": 12,
                "lr": args.lr,
                "advantage": args.advantage,
                "seed": args.seed,
                "out": str(out / "train"),
                "tensorboard": False,
            }
        )
        t0 = time.perf_counter()
        rows = train_agent(cfg, tasks, "simple")
    rewards = [r["reward_mean"] for r in rows]
    k = max(1, len(rows) // 4)
    print(
        f"reward: first {k} steps {statistics.fmean(rewards[:k]):.3f}, last {k} steps "
        f"{statistics.fmean(rewards[-k:]):.3f}; {time.perf_counter() - t0:.0f} s; "
        f"max logprob_gap {max(r.get('logprob_gap', 0.0) for r in rows):.2e}"
    )
    print(plot_rewards(out / "train"))


if __name__ == "__main__":
    main()
