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
4. ``micro_batch="auto"`` (issue 31): the learner's update alone, on ``--mb-episodes``
   synthetic episodes (default 256, the bench's 32 x 8; prompts of 24-48 tokens, 32
   sampled), ``--mb-steps`` steps each at ``micro_batch`` 64, at ``"auto"`` and at
   ``"auto"`` under a memory cap halfway between the two runs' peaks (so the whole step
   cannot fit and the real out-of-memory retry runs): the size each chose, the median
   update seconds of the steps after the first (the first builds the optimizer state and
   finds the size) and the peak GPU MiB. The ``tiny`` model always; with ``--hf`` also a
   random model of SmolLM2-135M's shape (``bench/train.py``'s ``smollm2``).

Exits 1 when a CUDA run does not learn or an auto micro-batch run fails; 2 when no GPU
is visible. Every loop is bounded by ``--steps``, ``--mb-steps`` and the seed count.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "envs" / "arith_env"))
sys.path.insert(0, str(ROOT / "bench"))


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


def _update_run(
    model: str, micro: int | Literal["auto"], episodes: int, steps: int, cap_mib: float | None
) -> dict[str, Any]:
    """``steps`` updates of a fresh learner on CUDA; ``cap_mib`` caps this process's GPU memory."""
    import torch

    from openenv.train import TrainConfig, synthetic_episodes
    from openenv.train._learner import Learner

    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    if cap_mib is not None:
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap_mib * 2**20 / total))
    row: dict[str, Any] = {"micro_batch": micro, "cap_mib": None if cap_mib is None else round(cap_mib)}
    try:
        learner = Learner(
            TrainConfig(env=["http://127.0.0.1:9"], model=model, device="cuda", micro_batch=micro, lr=1e-5)
        )
        emb = next(m for m in learner.policy.model.modules() if isinstance(m, torch.nn.Embedding))
        batch = synthetic_episodes(episodes, emb.num_embeddings)
        adv = [random.Random(i).uniform(-1, 1) for i in range(episodes)]
        torch.cuda.reset_peak_memory_stats()
        times, chosen = [], []
        for _ in range(steps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            sums = learner.update(batch, adv)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            if "micro_batch" in sums:
                chosen.append(int(sums["micro_batch"]))
        row.update(
            ok=True,
            chosen=chosen,
            kept=learner.micro_batch,
            first_update_s=round(times[0], 4),
            median_update_s=round(statistics.median(times[1:] or times), 4),
            peak_mib=round(torch.cuda.max_memory_allocated() / 2**20),
        )
        del learner
    except torch.OutOfMemoryError as exc:
        row.update(ok=False, error=str(exc).splitlines()[0][:300])
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
    return row


def micro_batch_check(model: str, episodes: int, steps: int) -> list[dict[str, Any]]:
    """Fixed 64, ``"auto"``, and ``"auto"`` capped between their peaks (when they differ)."""
    fixed = _update_run(model, 64, episodes, steps, None)
    auto = _update_run(model, "auto", episodes, steps, None)
    rows = [fixed, auto]
    if fixed.get("ok") and auto.get("ok") and auto["peak_mib"] > 1.5 * fixed["peak_mib"]:
        rows.append(_update_run(model, "auto", episodes, steps, (fixed["peak_mib"] + auto["peak_mib"]) / 2))
    if fixed.get("ok") and auto.get("ok"):
        auto["speedup_vs_64"] = round(fixed["median_update_s"] / auto["median_update_s"], 2)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/cuda-checks")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--hf", action="store_true", help="also run bench/train.py --model smollm2 on cuda")
    ap.add_argument(
        "--no-hf-train",
        action="store_true",
        help="with --hf: skip the bench/train.py run (micro_batch check only)",
    )
    ap.add_argument("--mb-episodes", type=int, default=256, help="episodes per step of the micro_batch check")
    ap.add_argument("--mb-steps", type=int, default=6, help="updates per run of the micro_batch check")
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
    models = {"tiny": "tiny"}
    if args.hf:
        from train import SHAPES

        from openenv.train import random_hf_model

        models["smollm2"] = str(random_hf_model(out / "smollm2-model", **SHAPES["smollm2"]))
    checks = {}
    for name, model in models.items():
        checks[name] = micro_batch_check(model, args.mb_episodes, args.mb_steps)
        for row in checks[name]:
            print(f"micro_batch {name}:", json.dumps(row), flush=True)
    (out / "micro_batch.json").write_text(json.dumps({"facts": info, "runs": checks}, indent=1))
    ok = ok and all(row["ok"] for rows in checks.values() for row in rows)
    if args.hf and not args.no_hf_train:
        cmd = [sys.executable, str(ROOT / "bench" / "train.py"), "--model", "smollm2", "--device", "cuda"]
        cmd += ["--steps", "6", "--rounds", "1", "--out", str(out / "train_smollm2_cuda.json")]
        print("hf:", " ".join(cmd), flush=True)
        rc = subprocess.run(cmd, timeout=900).returncode
        print(f"hf: exit {rc}", flush=True)
        ok = ok and rc == 0
    print(
        "cuda_checks:", "every CUDA run learned, every auto micro-batch ran" if ok else "FAILED", flush=True
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
