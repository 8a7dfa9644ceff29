"""The trainer's CUDA checks, for a machine with a GPU: does it learn on CUDA, and how fast.

    python bench/cuda_checks.py [--out DIR] [--steps 100] [--seeds 0,1]

1. Facts: torch, the GPU, bf16 support.
2. Learning: the ``tiny`` model on the arith env's easy level (``envs/arith_env/
   train_tiny.toml``: 100 steps, 16 groups of 16), trainer and rollouts in this process
   (``workers=0``), on ``cuda`` and then on ``cpu`` for each seed, against one arith
   server on loopback. A run learns when the mean reward of its last 10 steps is at
   least 0.3 above that of its first 10 (the CPU runs of these settings go from about
   0.08 to 0.53-0.84). Wall seconds per run and the median step time are printed, CUDA
   next to CPU from the same run.
3. An HF model on CUDA with bf16 autocast: ``bench/train.py --model smollm2 --device
   cuda`` (ours next to TRL's GRPOTrainer), when ``--hf`` is given.

Exits 1 when a CUDA run does not learn; 2 when no GPU is visible. Every loop is bounded
by ``--steps`` and the seed count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "envs" / "arith_env"))


def facts() -> dict[str, object]:
    import torch

    out: dict[str, object] = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out.update(
            gpu=props.name,
            gpu_mib=props.total_memory // 2**20,
            sms=props.multi_processor_count,
            bf16=torch.cuda.is_bf16_supported(),
        )
    return out


def learn(url: str, device: str, seed: int, steps: int, out: Path) -> dict[str, object]:
    from openenv.train import TrainConfig, train

    cfg = TrainConfig.from_file(
        ROOT / "envs" / "arith_env" / "train_tiny.toml",
        env=[url],
        out=str(out),
        workers=0,
        device=device,
        seed=seed,
        steps=steps,
        progress=False,
        checkpoint_every=10_000,
        env_timeout_s=10.0,
        episode_timeout_s=30.0,
        tensorboard=False,
    )
    t0 = time.perf_counter()
    rows = train(cfg)
    wall = time.perf_counter() - t0
    rewards = [float(r["reward_mean"]) for r in rows]
    first, last = statistics.fmean(rewards[:10]), statistics.fmean(rewards[-10:])
    step_s = [float(r["step_time_s"]) for r in rows[1:] if "step_time_s" in r]
    return {
        "device": device,
        "seed": seed,
        "steps": len(rows),
        "first10": round(first, 3),
        "last10": round(last, 3),
        "learned": last - first >= 0.3,
        "failed_episodes": sum(int(r.get("failed", 0)) for r in rows),
        "wall_s": round(wall, 1),
        "median_step_s": round(statistics.median(step_s), 4) if step_s else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/cuda-checks")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--hf", action="store_true", help="also run bench/train.py --model smollm2 on cuda")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    info = facts()
    print("facts:", json.dumps(info), flush=True)
    if not info["cuda"]:
        print("cuda_checks: no CUDA GPU is visible", file=sys.stderr)
        return 2

    from arith_env import EASY, ArithEnv

    from openenv.server import ServerSettings, create_app, serve_in_background

    app = create_app(
        ArithEnv,
        settings=ServerSettings(max_sessions=512),
        env_kwargs=EASY.model_dump(exclude_unset=True),
    )
    results = []
    with serve_in_background(app) as server:
        for seed in [int(s) for s in args.seeds.split(",") if s]:
            for device in ("cuda", "cpu"):
                row = learn(server.url, device, seed, args.steps, out / f"{device}-{seed}")
                print("learn:", json.dumps(row), flush=True)
                results.append(row)
    (out / "learn.json").write_text(json.dumps({"facts": info, "runs": results}, indent=1))
    ok = all(r["learned"] for r in results if r["device"] == "cuda")
    if args.hf:
        cmd = [sys.executable, str(ROOT / "bench" / "train.py"), "--model", "smollm2", "--device", "cuda"]
        cmd += ["--steps", "6", "--rounds", "1", "--out", str(out / "train_smollm2_cuda.json")]
        print("hf:", " ".join(cmd), flush=True)
        rc = subprocess.run(cmd, timeout=900).returncode
        print(f"hf: exit {rc}", flush=True)
        ok = ok and rc == 0
    print("cuda_checks:", "every CUDA run learned" if ok else "FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
