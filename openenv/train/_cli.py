"""``openenv train ...`` and ``openenv train plot DIR``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .._exceptions import OpenEnvError
from ._algos import ADVANTAGES, LOSSES
from ._config import TrainConfig
from ._plot import plot_rewards


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="openenv train",
        description="Train a policy with GRPO against text envs (RFC 0002). "
        "'openenv train plot DIR' draws DIR/metrics.jsonl to DIR/reward.png.",
    )
    p.add_argument("--env", action="append", metavar="URL", help="env server URL (repeatable)")
    p.add_argument("--model", help="'tiny' (built locally) or a local Hugging Face model folder")
    p.add_argument("--steps", type=int, help="training steps")
    p.add_argument("--group-size", type=int, help="episodes per prompt (G)")
    p.add_argument("--prompts-per-step", type=int, help="prompts (groups) per step (B)")
    p.add_argument("--max-turns", type=int, help="turns per episode at most")
    p.add_argument("--workers", type=int, help="rollout worker processes on Monarch; 0 = in this process")
    p.add_argument(
        "--env-replicas",
        type=int,
        metavar="N",
        help="serve --env (a folder or name) as N replicas on Monarch, routed by load",
    )
    p.add_argument("--device", choices=("cpu", "cuda"))
    p.add_argument("--out", metavar="DIR", help="where metrics.jsonl and checkpoint.pt go")
    p.add_argument("--lr", type=float, help="learning rate (AdamW)")
    p.add_argument("--max-new-tokens", type=int, help="tokens sampled per turn at most")
    p.add_argument("--advantage", choices=sorted(ADVANTAGES), help="group advantage")
    p.add_argument("--loss", choices=sorted(LOSSES), help="policy loss")
    p.add_argument("--seed", type=int, help="seed of the run (model init, sampling, tasks)")
    p.add_argument(
        "--sampler",
        choices=("auto", "hf", "vllm"),
        help="rollout sampler: 'hf' generate, 'vllm' (needs vLLM), 'auto' (vLLM when installed, on CUDA)",
    )
    p.add_argument(
        "--no-tensorboard",
        dest="tensorboard",
        action="store_false",
        default=None,
        help="do not write TensorBoard events to DIR/tb/",
    )
    p.add_argument(
        "--agent",
        choices=("simple",),
        help="train on runs of this loop-owning agent in the env at --env, captured (docs/agents.md)",
    )
    p.add_argument("--task", action="append", metavar="ID", help="with --agent: a task of the env (repeat)")
    p.add_argument("--config", metavar="FILE", help="a .toml or .json file with any TrainConfig field")
    p.add_argument("--resume", action="store_true", default=None, help="continue from DIR/checkpoint.pt")
    return p


_FLAGS = (
    "env",
    "model",
    "steps",
    "group_size",
    "prompts_per_step",
    "max_turns",
    "workers",
    "env_replicas",
    "device",
    "out",
    "lr",
    "max_new_tokens",
    "advantage",
    "loss",
    "seed",
    "sampler",
    "tensorboard",
    "resume",
)


def main(argv: Sequence[str], agent_runs: Callable[..., list[dict[str, Any]]] | None = None) -> int:
    """``openenv train``; ``agent_runs(cfg, tasks, agent)`` runs ``--agent`` (the command
    line passes ``openenv.agentrl.train_agent``, a part above this one)."""
    argv = list(argv)
    if argv[:1] == ["plot"]:
        return _plot(argv[1:])
    args = build_parser().parse_args(argv)
    given = {k: getattr(args, k) for k in _FLAGS if getattr(args, k) is not None}
    if args.task and not args.agent:
        print("openenv train: --task names a task for --agent runs; give --agent too", file=sys.stderr)
        return 2
    if not args.config and "env" not in given:
        print("openenv train: --env URL is required (a running env server, e.g. `openenv serve "
              "envs/arith_env --port 8000` then --env http://127.0.0.1:8000), or --config FILE",
              file=sys.stderr)
        return 2
    try:
        cfg = TrainConfig.from_file(args.config, **given) if args.config else TrainConfig.from_dict(given)
    except (ValueError, TypeError, OSError) as exc:
        print(f"openenv train: {exc}", file=sys.stderr)
        return 2
    from ._preflight import TrainingFailed
    from ._trainer import train

    try:
        if args.agent:
            if agent_runs is None:
                raise ValueError("--agent runs from the openenv command line (openenv.agentrl.train_agent)")
            rows = agent_runs(cfg, args.task or [], args.agent)
        else:
            rows = train(cfg)
    except TrainingFailed as exc:  # the run itself failed: exit 1, as a failed command
        print(f"openenv train: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OpenEnvError) as exc:  # what was asked for cannot run
        print(f"openenv train: {exc}", file=sys.stderr)
        return 2
    if rows:
        last = rows[-1]
        print(
            f"step {last['step']}: reward_mean {last['reward_mean']:.4f}; metrics in {cfg.out}/metrics.jsonl"
        )
    return 0


def _plot(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="openenv train plot", description="Draw the reward curve to a PNG.")
    p.add_argument("dir", help="a training output folder (with metrics.jsonl)")
    p.add_argument("-o", "--output", help="PNG path (default DIR/reward.png)")
    args = p.parse_args(argv)
    try:
        path = plot_rewards(args.dir, args.output)
    except (ValueError, OSError) as exc:
        print(f"openenv train plot: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0
