"""Upstream's ``openenv.core.evals`` over ``openenv.eval``: the harness interface over our
runner (``OpenEnvHarness``), and Inspect AI (PyPI's ``inspect-ai``) driving ``openenv
policy serve``'s tiny checkpoint through ``InspectAIHarness``, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openenv.core.evals import EvalConfig, EvalHarness, EvalResult, InspectAIHarness
from openenv.eval import HarnessConfig, OpenEnvHarness

ROOT = Path(__file__).resolve().parents[2]
ECHO = str(ROOT / "envs" / "echo_env")


def _config(**fields: object) -> EvalConfig:
    base = {"harness_name": "h", "harness_version": "0", "library_versions": {}, "dataset": "d"}
    return EvalConfig.model_validate({**base, "eval_parameters": {}, **fields})


def test_upstreams_names_are_ours_with_upstreams_models() -> None:
    assert EvalConfig is HarnessConfig
    assert issubclass(InspectAIHarness, EvalHarness)
    assert InspectAIHarness().name == "InspectAIHarness"
    with pytest.raises(ValueError, match="extra"):  # upstream's models forbid unknown fields
        _config(other=1)
    config = _config()
    with pytest.raises(ValueError, match="dataset"):  # and validate assignments
        config.dataset = 3  # type: ignore[assignment]
    with pytest.raises(ValueError, match="model"):  # upstream: 'model' is required
        InspectAIHarness().run("0", {}, "task.py", {})
    kwargs = InspectAIHarness(log_dir="logs").eval_kwargs(
        {"model": "m", "task_args": {}, "epochs": 2, "solver": None}
    )
    assert kwargs == {"epochs": 2, "log_dir": "logs"}  # empty dicts and Nones stay out, as upstream


def test_the_openenv_harness_runs_openenv_eval(tmp_path: Path) -> None:
    params = {
        "policy": "python:tests.eval._policies:seeded_echo",
        "out": str(tmp_path),
        "count": 2,
        "samples": 2,
    }
    result = OpenEnvHarness().run_from_config(
        _config(harness_name="openenv", dataset=ECHO, eval_parameters={**params, "max_turns": 2})
    )
    assert isinstance(result, EvalResult)
    written = json.loads((tmp_path / "results.json").read_text())
    assert result.scores["pass@1"] == written["pass_at_k"]["1"]
    assert result.scores["pass@2"] == written["pass_at_k"]["2"]
    assert result.scores["mean_reward"] == written["mean_reward"]
    assert (result.scores["episodes"], result.scores["errors"]) == (4, 0)
    assert result.config.eval_parameters["count"] == 2
    with pytest.raises(ValueError, match="'policy'"):
        OpenEnvHarness().run("0", {}, ECHO, {"out": str(tmp_path)})


def test_inspect_ai_drives_policy_serve_through_the_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inspect AI's own ``eval()`` with its generic OpenAI-compatible provider against
    ``openenv policy serve`` (the tiny checkpoint), offline. One sample's target is what
    the served model answers greedily to it (read first with the openai SDK), the other's
    can never be: accuracy is exactly 0.5 only if Inspect sent that chat and scored the
    reply."""
    inspect_ai = pytest.importorskip(
        "inspect_ai", reason="Inspect AI (pip install inspect-ai) is not installed"
    )
    pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")
    import openai
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    from openenv.policy import LocalModel, serve_app
    from openenv.server import serve_in_background

    monkeypatch.setenv("LOCAL_API_KEY", "none")  # Inspect's openai-api/local provider reads it
    with serve_in_background(serve_app(LocalModel("tiny", seed=0), model_name="tiny")) as llm:
        sdk = openai.OpenAI(base_url=llm.url + "/v1", api_key="none", max_retries=0)
        said = sdk.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "1 + 1 ="}], max_tokens=4, temperature=0
        )
        answer = said.choices[0].message.content
        assert answer
        task = inspect_ai.Task(
            dataset=[Sample(input="1 + 1 =", target=answer), Sample(input="2 + 2 =", target="\x00never")],
            solver=generate(),
            scorer=includes(),
        )
        config = _config(
            harness_name="inspect_ai",
            harness_version=inspect_ai.__version__,
            dataset="inline",
            eval_parameters={
                "task": task,
                "model": "openai-api/local/tiny",
                "model_base_url": llm.url + "/v1",
                "temperature": 0.0,
                "max_tokens": 4,
                "max_connections": 2,
            },
        )
        result = InspectAIHarness(log_dir=str(tmp_path / "logs")).run_from_config(config)
    assert result.scores["accuracy"] == pytest.approx(0.5)
    assert "stderr" in result.scores
    assert list((tmp_path / "logs").iterdir())  # Inspect's own log, where the harness said
