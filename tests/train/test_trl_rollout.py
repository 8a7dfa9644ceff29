"""``TrlRollout`` as ``GRPOTrainer``'s ``rollout_func`` against ``envs/arith_env``, with the
real TRL, transformers and a random local model; the example that uses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="the TRL bridge needs trl (the 'train' extra)")

from arith_env import MODELS, ArithOptions, make_problems, score
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOTrainer

from openenv.client import ASGITransport
from openenv.train import TrlRollout
from openenv.train._trl_rollout import _Batch

from ._trl_fixtures import grpo_config, model_dir, transport

__all__ = ["model_dir", "transport"]  # fixtures

EXAMPLE = Path(__file__).parents[2] / "examples" / "trl_grpo.py"


class Recording(TrlRollout):
    """``TrlRollout`` that keeps what it returned (to check against the env's scoring)."""

    outputs: list[tuple[list[Any], dict[str, list[Any]]]]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        out = super().__call__(prompts, trainer)
        self.outputs.append((prompts, out))
        return out


def test_rollout_func_rewards_are_the_envs(transport: ASGITransport, model_dir: Path, tmp_path: Path) -> None:
    rollout = Recording(
        "http://env", MODELS, max_new_tokens=3, transport=transport, reset_options={"partial_credit": True}
    )
    rollout.outputs = []
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=rollout.reward,
        args=grpo_config(tmp_path),
        train_dataset=rollout.dataset(range(32)),
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    trainer.train()
    assert len(rollout.outputs) == 2  # one generation batch per step
    opts = ArithOptions(ops="+", partial_credit=True)
    for prompts, out in rollout.outputs:
        assert len(prompts) == 8
        for i, prompt in enumerate(prompts):
            seed = rollout.tasks[prompt[-1]["content"]]
            problem, value = make_problems(seed, opts)[0]
            assert prompt[-1]["content"] == problem
            ids = out["completion_ids"][i]
            assert 1 <= len(ids) <= 3
            assert len(out["logprobs"][i]) == len(ids) == len(out["env_mask"][i])
            assert all(lp <= 0.0 for lp in out["logprobs"][i])
            b = score(tokenizer.decode(ids, skip_special_tokens=True), value)
            expected = 0.1 * b["format"] + 0.4 * b["digits"] + 0.5 * b["exact"]
            assert out["env_reward"][i] == pytest.approx(expected)
    logged = [row["reward"] for row in trainer.state.log_history if "reward" in row]
    assert logged == pytest.approx([sum(out["env_reward"]) / 8 for _, out in rollout.outputs])

    # Two rounds per episode, two turns: the env's second problem is appended with mask 0.
    two = TrlRollout(
        "http://env", MODELS, max_turns=2, max_new_tokens=2, transport=transport, reset_options={"rounds": 2}
    )
    rows = two.dataset(range(4))
    out = two([row["prompt"] for row in rows], trainer)
    for i, row in enumerate(rows):
        mask = out["env_mask"][i]
        second = make_problems(row["seed"], ArithOptions(ops="+", rounds=2))[1][0]
        first_turn = mask.index(0)
        env_ids = [t for t, m in zip(out["completion_ids"][i], mask, strict=True) if m == 0]
        assert second in tokenizer.decode(env_ids, skip_special_tokens=True)
        assert mask[:first_turn] == [1] * first_turn
        assert mask[-1] == 1  # the second answer is sampled
        assert 0.0 <= out["env_reward"][i] <= 1.0
    # The call's timings: env frames and sampling are parts of its wall time.
    last = two.last
    assert last["sampled_tokens"] == sum(sum(m) for m in out["env_mask"])
    assert last["env_s"] > 0.0
    assert last["sample_s"] > 0.0
    assert last["env_s"] + last["sample_s"] <= last["wall_s"]


def test_an_episode_whose_reset_failed_gets_one_pad_token_and_no_reward(transport: ASGITransport) -> None:
    rollout = TrlRollout("http://env", MODELS, transport=transport)
    batch = _Batch.start(["a", "b"], [[5, 6], [7]])
    batch.append(0, [1, 2], [-0.5, -0.25], sampled=True)
    batch.append(0, [3], [0.0], sampled=False)
    batch.returns = [0.5, None]  # "b" failed at its reset
    out = rollout._finish(batch, pad_token=9, wall_s=1.0)
    assert out["completion_ids"] == [[1, 2, 3], [9]]
    assert out["logprobs"] == [[-0.5, -0.25, 0.0], [0.0]]
    assert out["env_mask"] == [[1, 1, 0], [0]]
    assert out["env_reward"] == [0.5, None]
    assert rollout.last["sampled_tokens"] == 2.0


def test_unknown_prompt_is_a_clear_error(transport: ASGITransport) -> None:
    rollout = TrlRollout("http://env", MODELS, transport=transport)
    with pytest.raises(KeyError, match=r"not from TrlRollout\.dataset"):
        rollout._seed([{"role": "user", "content": "1+1="}])


def test_example_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--steps", "2", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in lines] == ["1", "2"]
    for line in lines:
        assert 0.0 <= float(line.split()[3]) <= 1.0
