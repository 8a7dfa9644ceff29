"""TRL's ``GRPOTrainer`` trains a tiny random Hugging Face model against ``envs/arith_env``.

    python examples/trl_grpo.py [--steps 3] [--out runs/trl_grpo]

Serves ``ArithEnv`` on a free loopback port (one-digit sums, partial credit), writes a
randomly initialised Llama with a local character tokenizer (``random_hf_model``: no
download), and runs TRL's ``GRPOTrainer`` with ``openenv.train.TrlRollout`` as its
``rollout_func``: every completion is an action sent over the protocol through our
client, and the env's reward is TRL's reward. The tokenizer has no tool-calling chat
template, so TRL's ``environment_factory`` path (``openenv.train.trl_environment``) is
not used here. Prints one line per step with TRL's logged reward.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from arith_env import MODELS, ArithEnv

from openenv.server import create_app, serve_in_background
from openenv.train import TrlRollout, random_hf_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", default="runs/trl_grpo")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    defaults = {"digits": 1, "ops": "+", "partial_credit": True}
    server = serve_in_background(create_app(ArithEnv, env_kwargs=defaults))
    url = server.url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = random_hf_model(Path(tmp) / "model", hidden_size=64, layers=2, heads=4, seed=0)
            model = AutoModelForCausalLM.from_pretrained(path)
            tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
        rollout = TrlRollout(url, MODELS, max_new_tokens=3)
        config = GRPOConfig(
            output_dir=args.out,
            max_steps=args.steps,
            per_device_train_batch_size=8,
            num_generations=4,  # a group: 4 episodes of one task (one seed)
            max_completion_length=3,
            learning_rate=1e-3,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            seed=0,
            disable_tqdm=True,
        )
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=rollout.reward,
            args=config,
            train_dataset=rollout.dataset(range(64)),
            processing_class=tokenizer,
            rollout_func=rollout,
        )
        trainer.train()
    finally:
        server.stop()
    for row in trainer.state.log_history:
        if "reward" in row:
            print(
                f"step {int(row['step']):3d}  reward {row['reward']:.3f}  reward_std {row['reward_std']:.3f}"
            )


if __name__ == "__main__":
    main()
