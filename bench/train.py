"""Trainer throughput, ours next to TRL's GRPOTrainer: step time, tokens/s, memory, env share.

    .venv/bin/python bench/train.py [--model tiny|small|smollm2] [--workers N] [--device cpu|cuda]
                                    [--steps 6] [--prompts 8] [--new-tokens 16] [--no-trl]
                                    [--rounds 1] [--threads N] [--micro-batch N|auto] [--out results.json]

Serves the example text env (``examples/train_count.py``'s ``CountEnv``) on a loopback
port in this process, then runs, one after the other and each in a child process of its
own (so each has its own peak memory): ``openenv.train.train`` for ``--steps`` steps, and
TRL's ``GRPOTrainer`` for as many steps on the same model folder, the same env server,
group size, prompts per step, new tokens and device (``_train_trl.py`` says how the two
are kept doing the same work). The first step of each (start-up, worker spawn, first
allocations) is left out of the figures; the rest are medians. ``small`` and ``smollm2``
are randomly initialised Llama models written once by ``random_hf_model`` (``smollm2``
has SmolLM2-135M's shape, with our character-level vocabulary); on CUDA both trainers
use bf16 autocast. ``tiny`` is not a Hugging Face model: TRL is not run for it. The
ratios are ours / TRL's from the same run. ``--rounds N`` runs the pair N times, the
order swapped every round (ours then TRL, TRL then ours, ...), and gives each round's
ratios and their median: on a shared machine the load moves between runs. ``--threads``
sets torch's thread count in both children; with 1, ``cpu_s_per_step`` (the process's CPU
seconds per step after the first) is the figure least moved by other load. Every loop
is bounded by ``--steps`` and ``--rounds``; each child has a deadline; the server and
any Monarch workers stop at the end.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _util import peak_mib

ROOT = Path(__file__).resolve().parents[1]
SHAPES: dict[str, dict[str, int]] = {
    "small": {"hidden_size": 256, "layers": 4, "heads": 4, "intermediate_size": 1024},
    "smollm2": {"hidden_size": 576, "layers": 30, "heads": 9, "intermediate_size": 1536},
}
GROUP_SIZE = 8
LR = 1e-4
CHILD_DEADLINE_S = 1800
KEYS = (
    "step_time_s",
    "rollout_s",
    "train_s",
    "gen_tokens_per_s",
    "train_tokens_per_s",
    "env_share",
    "cpu_s_per_step",
    "peak_mib",
)


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("train_count", ROOT / "examples" / "train_count.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_ours(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Our trainer against the env at ``args.url``; medians over the steps after the first."""
    import torch

    from openenv.train import TrainConfig, train
    from openenv.train._metrics import MetricsLog

    cuda = args.device == "cuda"
    marks: list[float] = []  # the process's CPU seconds at the end of each step
    write = MetricsLog.write

    def write_and_mark(self: Any, row: dict[str, Any]) -> None:
        write(self, row)
        marks.append(time.process_time())

    setattr(MetricsLog, "write", write_and_mark)  # noqa: B010
    cfg = TrainConfig(
        env=[args.url],
        model=args.model_dir,
        steps=args.steps,
        group_size=GROUP_SIZE,
        prompts_per_step=args.prompts,
        max_turns=1,
        max_new_tokens=args.new_tokens,
        workers=args.workers,
        device=args.device,
        out=str(workdir / "run"),
        progress=False,
        checkpoint_every=10**9,
        lr=LR,
        **({"micro_batch": args.micro_batch} if args.micro_batch else {}),
    )
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    rows = train(cfg)
    wall = time.perf_counter() - t0
    steady = rows[1:] or rows
    med = statistics.median
    peak = peak_mib(cuda)
    where = f"{args.workers} Monarch workers" if args.workers else "in-process"
    return {
        "trainer": f"openenv.train ({where})",
        "steps": len(rows),
        "episodes_per_step": steady[0]["episodes"] + steady[0]["failed"],
        "wall_s": wall,
        "cpu_s_per_step": (marks[-1] - marks[0]) / (len(marks) - 1),
        "sampled_tokens_per_step": med(r["tokens"] for r in steady),
        "step_time_s": med(r["step_time_s"] for r in steady),
        "rollout_s": med(r["rollout_s"] for r in steady),
        "train_s": med(r["train_s"] for r in steady),
        "weight_sync_s": med(r["weight_sync_s"] for r in steady),
        "gen_tokens_per_s": med(r["gen_tokens_per_s"] for r in steady),
        "train_tokens_per_s": med(r["train_tokens_per_s"] for r in steady),
        "env_share": med(r["env_wall_s"] / r["rollout_s"] for r in steady),
        "peak_mib": peak,
        "peak_kind": "torch.cuda.max_memory_allocated" if cuda else "trainer process max RSS",
        # micro_batch="auto": the sizes the steps logged (the first step's choice, then any shrink)
        "micro_batch_chosen": [int(r["micro_batch"]) for r in rows if "micro_batch" in r],
    }


def child(args: argparse.Namespace) -> None:
    """One trainer in this process; its figures go to ``--child-out``."""
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        if args.child == "ours":
            result = run_ours(args, Path(tmp))
        else:
            from _train_trl import run_trl

            from openenv import EnvModels, State

            example = load_example()
            result = run_trl(
                model_dir=args.model_dir,
                url=args.url,
                models=EnvModels(example.Say, example.Shown, State),
                steps=args.steps,
                group_size=GROUP_SIZE,
                prompts=args.prompts,
                new_tokens=args.new_tokens,
                device=args.device,
                lr=LR,
                workdir=Path(tmp),
            )
    result["loadavg_1min"] = [load_start, os.getloadavg()[0]]
    Path(args.child_out).write_text(json.dumps(result))


def spawn(kind: str, args: argparse.Namespace, model_dir: str, url: str, workdir: Path) -> dict[str, Any]:
    out = workdir / f"{kind}.json"
    out.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        *("--child", kind, "--child-out", str(out), "--model-dir", model_dir, "--url", url),
        *("--steps", str(args.steps), "--prompts", str(args.prompts), "--new-tokens", str(args.new_tokens)),
        *("--device", args.device, "--workers", str(args.workers), "--threads", str(args.threads or 0)),
        *("--micro-batch", str(args.micro_batch)),
    ]
    proc = subprocess.run(cmd, timeout=CHILD_DEADLINE_S, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the {kind} run failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def ratios(ours: dict[str, Any], trl: dict[str, Any]) -> dict[str, float]:
    """Ours / TRL's for each figure (step time below 1 and tokens/s above 1 favour ours)."""
    return {k: ours[k] / trl[k] for k in KEYS if ours.get(k) and trl.get(k)}


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    from openenv.server import create_app, serve_in_background

    load_start = os.getloadavg()
    model_dir = "tiny"
    if args.model in SHAPES:
        from openenv.train import random_hf_model

        model_dir = str(random_hf_model(workdir / args.model, **SHAPES[args.model]))
    example = load_example()
    server = serve_in_background(create_app(example.CountEnv))
    rounds: list[dict[str, Any]] = []
    try:
        for i in range(args.rounds):
            kinds = ["ours", "trl"] if args.model in SHAPES and not args.no_trl else ["ours"]
            order = kinds if i % 2 == 0 else kinds[::-1]
            got = {kind: spawn(kind, args, model_dir, server.url, workdir) for kind in order}
            ours, trl = got["ours"], got.get("trl")
            rounds.append(
                {
                    "order": order,
                    "ours": ours,
                    "trl": trl,
                    "ours_over_trl": ratios(ours, trl) if trl else None,
                }
            )
    finally:
        server.stop()
    per_round = [r["ours_over_trl"] for r in rounds if r["ours_over_trl"]]
    return {
        "model": args.model,
        "device": args.device,
        "group_size": GROUP_SIZE,
        "prompts_per_step": args.prompts,
        "new_tokens": args.new_tokens,
        "micro_batch": args.micro_batch or "default",
        "steps": args.steps,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "loadavg_start": load_start,
        "loadavg_end": os.getloadavg(),
        "threads": args.threads or "torch default",
        "rounds": rounds,
        "ours_over_trl_median": (
            {k: statistics.median(r[k] for r in per_round) for k in per_round[0]} if per_round else None
        ),
    }


def _micro_batch(text: str) -> int | str:
    """``--micro-batch``: a whole number, or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or 'auto', not {text!r}") from None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny", choices=["tiny", *SHAPES])
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--no-trl", action="store_true", help="run our trainer only")
    p.add_argument(
        "--rounds", type=int, default=1, help="run the pair this many times, order swapped each round"
    )
    p.add_argument("--threads", type=int, default=0, help="torch threads per trainer; 0: default")
    p.add_argument(
        "--micro-batch",
        type=_micro_batch,
        default=0,
        help="our trainer's micro_batch (episodes per forward/backward), or 'auto' (the largest that "
        "fits on CUDA); 0: TrainConfig's default. TRL's batch here is the whole step",
    )
    p.add_argument("--out")
    p.add_argument("--child", choices=["ours", "trl"], help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    p.add_argument("--model-dir", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.steps < 2:
        p.error("--steps must be at least 2 (the first step is left out)")
    if args.rounds < 1 or args.threads < 0:
        p.error("--rounds must be at least 1 and --threads at least 0")
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args, Path(tmp))
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
