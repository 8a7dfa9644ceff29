"""TRL's ``GRPOTrainer`` on the benchmark's model and env: the comparison run of ``train.py``.

TRL samples through ``openenv.train.TrlRollout`` (its ``rollout_func``): the same HF
``generate`` call on the trained model that our in-process trainer makes, and the same
batch frames to the env over our client. The config is set so one TRL step does what one
step of ours does: one generation batch of ``prompts x group`` episodes, one forward and
backward over it (``num_iterations=1``, no gradient accumulation, so no extra forward for
old logprobs), no reference model (``beta=0``), no activation checkpointing (TRL's default
is on; ours has none), one AdamW step with the same learning rate and gradient clip;
bf16 autocast only on CUDA, as ours.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from _util import peak_mib


def run_trl(
    *,
    model_dir: str,
    url: str,
    models: Any,
    steps: int,
    group_size: int,
    prompts: int,
    new_tokens: int,
    device: str,
    lr: float,
    workdir: Path,
) -> dict[str, Any]:
    """Train ``steps`` TRL steps against the env at ``url`` (its ``EnvModels`` are ``models``);
    medians over the steps after the first."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer  # type: ignore[attr-defined]

    from openenv.train import TrlRollout

    cuda = device == "cuda"
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    rollout = TrlRollout(url, models, max_new_tokens=new_tokens, temperature=1.0)
    calls: list[dict[str, float]] = []

    def rollout_func(batch: list[Any], trainer: Any) -> dict[str, list[Any]]:
        out = rollout(batch, trainer)
        context = sum(len(p) + len(c) for p, c in zip(out["prompt_ids"], out["completion_ids"], strict=True))
        calls.append({**rollout.last, "context_tokens": float(context)})
        return out

    steps_rows: list[dict[str, float]] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            self.t0 = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            steps_rows.append({"step_time_s": time.perf_counter() - self.t0, "cpu_mark": time.process_time()})

    config = GRPOConfig(
        output_dir=str(workdir / "trl"),
        max_steps=steps,
        per_device_train_batch_size=prompts * group_size,
        num_generations=group_size,
        max_completion_length=new_tokens,
        learning_rate=lr,
        weight_decay=0.0,
        max_grad_norm=1.0,
        beta=0.0,
        num_iterations=1,
        gradient_accumulation_steps=1,
        epsilon=0.2,
        epsilon_high=0.28,
        temperature=1.0,
        activation_checkpointing=False,
        bf16=cuda,
        use_cpu=not cuda,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        seed=0,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=rollout.reward,
        args=config,
        train_dataset=rollout.dataset(range(steps * prompts)),
        processing_class=tokenizer,
        rollout_func=rollout_func,
        callbacks=[Clock()],
    )
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    if len(steps_rows) != steps or len(calls) != steps:
        raise RuntimeError(f"TRL ran {len(steps_rows)} steps and {len(calls)} rollouts, not {steps}")
    for row, call in zip(steps_rows, calls, strict=True):
        row["rollout_s"] = call["wall_s"]
        row["train_s"] = row["step_time_s"] - call["wall_s"]
        row["gen_tokens_per_s"] = call["sampled_tokens"] / max(call["wall_s"], 1e-9)
        row["env_share"] = call["env_s"] / max(call["wall_s"], 1e-9)
        row["sampled_tokens"] = call["sampled_tokens"]
        row["train_tokens_per_s"] = call["context_tokens"] / max(row["train_s"], 1e-9)
    steady = steps_rows[1:] or steps_rows
    med = statistics.median
    peak = peak_mib(cuda)
    result: dict[str, Any] = {
        "trainer": f"trl {__import__('trl').__version__} GRPOTrainer",
        "steps": len(steps_rows),
        "episodes_per_step": prompts * group_size,
        "wall_s": wall,
        "cpu_s_per_step": (steps_rows[-1]["cpu_mark"] - steps_rows[0]["cpu_mark"]) / (steps - 1),
        "sampled_tokens_per_step": med(r["sampled_tokens"] for r in steady),
    }
    for key in ("step_time_s", "rollout_s", "train_s", "gen_tokens_per_s", "train_tokens_per_s", "env_share"):
        result[key] = med(r[key] for r in steady)
    result["weight_sync_s"] = 0.0  # the sampler is the trained model: nothing to send
    result["peak_mib"] = peak
    result["peak_kind"] = "torch.cuda.max_memory_allocated" if cuda else "TRL process max RSS"
    return result
