"""TRL bridges: an env as a TRL ``environment_factory`` class (tools derived like the MCP
bridge's), and ``TrlRollout`` as ``GRPOTrainer``'s ``rollout_func`` against ``envs/arith_env``,
with the real TRL, transformers and a random local model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="the TRL bridge needs trl (the 'train' extra)")

from arith_env import MODELS, ArithAction, ArithEnv, ArithOptions, make_problems, score
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import get_json_schema
from trl import GRPOConfig, GRPOTrainer

from openenv import Action, EnvModels, Observation, State
from openenv._exceptions import ValidationFailed
from openenv.client import ASGITransport
from openenv.mcp._tools import ActionTools
from openenv.server import create_app
from openenv.train import TrlRollout, random_hf_model, trl_environment

EXAMPLE = Path(__file__).parents[2] / "examples" / "trl_grpo.py"
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="module")
def transport() -> Iterator[ASGITransport]:
    with ASGITransport(create_app(ArithEnv, env_kwargs={"digits": 1, "ops": "+"})) as t:
        yield t


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return random_hf_model(tmp_path_factory.mktemp("model") / "m", seed=0)


def grpo_config(out: Path, **kw: Any) -> GRPOConfig:
    base: dict[str, Any] = {
        "output_dir": str(out),
        "max_steps": 2,
        "per_device_train_batch_size": 8,
        "num_generations": 4,
        "max_completion_length": 3,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": True,
        "disable_tqdm": True,
        "seed": 0,
    }
    return GRPOConfig(**{**base, **kw})


def test_tools_are_the_mcp_bridge_tools(transport: ASGITransport) -> None:
    cls = trl_environment("http://env", MODELS, transport=transport)
    (spec,) = ActionTools(ArithAction, default_name="step").specs.values()
    schema = get_json_schema(cls().arith)["function"]
    assert schema["name"] == spec.name == "arith"
    assert schema["description"] == spec.description
    assert schema["parameters"]["required"] == spec.input_schema["required"] == ["answer"]
    assert set(schema["parameters"]["properties"]) == set(spec.input_schema["properties"])
    assert schema["parameters"]["properties"]["answer"]["type"] == "string"
    assert "metadata" not in schema["parameters"]["properties"]
    cls.close_all()


def test_an_episode_through_the_tool(transport: ASGITransport) -> None:
    cls = trl_environment("http://env", MODELS, transport=transport, option_columns=["digits"])
    env = cls()
    prompt = env.reset(prompt=[{"role": "user", "content": "solve"}], seed=5, digits=2, other="ignored")
    problem, value = make_problems(5, ArithOptions(digits=2, ops="+"))[0]
    assert prompt == problem
    with pytest.raises(ValidationFailed, match="answer"):
        env.arith(answer="9" * 300)  # over the field's max_length: the action model validates
    reply = json.loads(env.arith(answer=str(value)))
    assert reply["reward"] == 1.0
    assert reply["done"] is True
    assert reply["metadata"]["reward_breakdown"]["exact"] == 1.0
    assert env.get_reward() == 1.0
    with pytest.raises(RuntimeError, match="episode is over"):
        env.arith(answer="1")
    assert env.reset(seed=5) == make_problems(5, ArithOptions(ops="+"))[0][0]  # the server's default digits
    assert env.get_reward() == 0.0
    cls.close_all()


def test_an_action_named_like_a_trl_method_is_refused() -> None:
    class ResetAction(Action):
        text: str

    models = EnvModels(ResetAction, Observation, State)
    with pytest.raises(TypeError, match="clashes with TRL"):
        trl_environment("http://env", models)


def test_grpo_trainer_takes_it_as_environment_factory(
    transport: ASGITransport, model_dir: Path, tmp_path: Path
) -> None:
    """TRL probes the class, lists its tool, resets one instance per rollout and reads
    ``get_reward``; TRL's bundled Qwen3 template gives the char tokenizer tool calling."""
    datasets = pytest.importorskip("datasets")
    from trl.chat_template_utils import qwen3_chat_template

    cls = trl_environment("http://env", MODELS, transport=transport)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    tokenizer.chat_template = qwen3_chat_template
    rows = [{"prompt": [{"role": "user", "content": "solve"}], "seed": s} for s in range(8)]
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        args=grpo_config(tmp_path, max_steps=1, per_device_train_batch_size=4, max_completion_length=4),
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=tokenizer,
        environment_factory=cls,
    )
    try:
        assert [tool.__name__ for tool in trainer.tools] == ["arith"]
        assert trainer.reward_func_names == ["ArithTrlEnv"]
        trainer.train()
    finally:
        cls.close_all()
    logged = [row for row in trainer.state.log_history if "rewards/ArithTrlEnv/mean" in row]
    assert len(logged) == 1
    assert logged[0]["tools/call_frequency"] == 0.0  # a random model makes no tool call: return 0
    assert logged[0]["rewards/ArithTrlEnv/mean"] == 0.0


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
