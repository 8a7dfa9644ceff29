"""``trl_environment``: an env as a TRL ``environment_factory`` class (tools derived like the
MCP bridge's), against ``envs/arith_env`` with the real TRL, transformers and a random local model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the TRL bridge needs trl (the 'train' extra)")

from arith_env import MODELS, ArithAction, ArithOptions, make_problems
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import get_json_schema
from trl import GRPOTrainer

from openenv import Action, EnvModels, Observation, State
from openenv._exceptions import ValidationFailed
from openenv.client import ASGITransport
from openenv.mcp._tools import ActionTools
from openenv.train import trl_environment

from ._trl_fixtures import grpo_config, model_dir, transport

__all__ = ["model_dir", "transport"]  # fixtures


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
