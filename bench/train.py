"""Trainer throughput: generation and training tokens/s, step time, weight sync, memory, env share.

    .venv/bin/python bench/train.py [--model tiny|small|smollm2] [--workers N] [--device cpu|cuda]
                                    [--steps 6] [--new-tokens 16] [--out results.json]

Serves the example text env (``examples/train_count.py``'s ``CountEnv``) on a loopback
port and runs ``openenv.train.train`` for ``--steps`` steps; the first step (start-up,
worker spawn) is left out of the figures. ``small`` and ``smollm2`` are randomly
initialised Llama models written by ``random_hf_model`` (``smollm2`` has SmolLM2-135M's
shape, with our character-level vocabulary); on CUDA the model runs under bf16 autocast.
Every loop is bounded by ``--steps``; the server and any Monarch workers stop at the end.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHAPES: dict[str, dict[str, int]] = {
    "small": {"hidden_size": 256, "layers": 4, "heads": 4, "intermediate_size": 1024},
    "smollm2": {"hidden_size": 576, "layers": 30, "heads": 9, "intermediate_size": 1536},
}


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("train_count", ROOT / "examples" / "train_count.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    import torch

    from openenv.train import TrainConfig, train
    from openenv.train._hf import random_hf_model

    example = load_example()
    model = args.model
    if model in SHAPES:
        model = str(random_hf_model(workdir / model, **SHAPES[model]))
    server, url = example.serve_in_thread()
    try:
        cfg = TrainConfig(
            env=[url],
            model=model,
            steps=args.steps,
            group_size=8,
            prompts_per_step=args.prompts,
            max_turns=1,
            max_new_tokens=args.new_tokens,
            workers=args.workers,
            device=args.device,
            out=str(workdir / "run"),
            progress=False,
            checkpoint_every=10**9,
            lr=1e-4,
        )
        t0 = time.perf_counter()
        rows = train(cfg)
        wall = time.perf_counter() - t0
    finally:
        server.should_exit = True
    steady = rows[1:] or rows
    episodes = [json.loads(line) for line in (workdir / "run" / "metrics.jsonl").read_text().splitlines()]
    assert len(episodes) == len(rows)
    cuda = args.device == "cuda"
    peak = (
        torch.cuda.max_memory_allocated() / 2**20
        if cuda
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    )
    med = statistics.median
    return {
        "model": args.model,
        "workers": args.workers,
        "device": args.device,
        "steps": len(rows),
        "episodes_per_step": steady[0]["episodes"] + steady[0]["failed"],
        "wall_s": wall,
        "step_time_s": med(r["step_time_s"] for r in steady),
        "rollout_s": med(r["rollout_s"] for r in steady),
        "train_s": med(r["train_s"] for r in steady),
        "weight_sync_s": med(r["weight_sync_s"] for r in steady),
        "gen_tokens_per_s": med(r["gen_tokens_per_s"] for r in steady),
        "train_tokens_per_s": med(r["train_tokens_per_s"] for r in steady),
        "env_share": med(r["env_wall_s"] / r["rollout_s"] for r in steady),
        "peak_mib": peak,
        "peak_kind": "torch.cuda.max_memory_allocated" if cuda else "trainer process max RSS",
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny", choices=["tiny", *SHAPES])
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--out")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args, Path(tmp))
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    sys.exit(main())
