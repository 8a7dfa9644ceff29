"""Upstream's ``openenv.core.evals`` over ``openenv.eval``: the harness interface over our
runner (``OpenEnvHarness``), and Inspect AI (PyPI's ``inspect-ai``, in its own side venv
made by ``scripts/side_venvs.sh inspect``) driving ``openenv policy serve``'s tiny
checkpoint through ``InspectAIHarness``, offline."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from openenv.core.evals import EvalConfig, EvalHarness, EvalResult, InspectAIHarness
from openenv.eval import HarnessConfig, OpenEnvHarness

ROOT = Path(__file__).resolve().parents[2]
ECHO = str(ROOT / "envs" / "echo_env")
INSPECT_VENV = Path(os.environ.get("OPENENV_INSPECT_VENV") or ROOT / ".cache" / "inspect-venv")
#: Written after a complete install (it holds the pin): a half-made venv is rebuilt, not used.
INSPECT_STAMP = INSPECT_VENV / "openenv-inspect-ready"
INSPECT_VERSION = "0.3.285"  # scripts/side_venvs.sh's pin
INSPECT_DRIVER = Path(__file__).resolve().parent / "inspect_side" / "drive_inspect.py"


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


def ready() -> bool:
    """The side venv holds the pinned release, completely installed."""
    return INSPECT_STAMP.exists() and INSPECT_STAMP.read_text().strip() == f"inspect-ai=={INSPECT_VERSION}"


def inspect_python() -> Path:
    """The Inspect side venv's interpreter (inspect-ai is not in .venv: its botocore holds
    python-dateutil below what kubernetes needs), made by ``scripts/side_venvs.sh inspect``
    if scripts/test.sh has not made it already; skips with pip's last line when pip cannot
    install."""
    python = INSPECT_VENV / "bin" / "python"
    if python.exists() and ready():
        return python
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "side_venvs.sh"), "inspect"], capture_output=True, text=True,
        timeout=1500, env={**os.environ, "OPENENV_INSPECT_VENV": str(INSPECT_VENV)},
    )
    if done.returncode != 0 or not ready():
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        why = lines[-1] if lines else done.returncode
        pytest.skip(f"cannot install inspect-ai=={INSPECT_VERSION} into {INSPECT_VENV}: {why}")
    return python


@pytest.mark.timeout(1800)  # the first run outside scripts/test.sh makes the side venv
def test_inspect_ai_drives_policy_serve_through_the_harness(tmp_path: Path) -> None:
    """Inspect AI's own ``eval()`` (the real inspect-ai, in its side venv, by
    ``inspect_side/drive_inspect.py``) through ``InspectAIHarness``, with its generic
    OpenAI-compatible provider, against ``openenv policy serve`` (the tiny checkpoint,
    served here from .venv), offline. One sample's target is what the served model answers
    greedily to it (read first with the openai SDK), the other's can never be: accuracy is
    exactly 0.5 only if Inspect sent that chat and scored the reply."""
    pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")
    python = inspect_python()
    import openai

    from openenv.policy import LocalModel, serve_app
    from openenv.server import serve_in_background

    logs = tmp_path / "logs"
    with serve_in_background(serve_app(LocalModel("tiny", seed=0), model_name="tiny")) as llm:
        sdk = openai.OpenAI(base_url=llm.url + "/v1", api_key="none", max_retries=0)
        said = sdk.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "1 + 1 ="}], max_tokens=4, temperature=0
        )
        answer = said.choices[0].message.content
        assert answer
        done = subprocess.run(
            [str(python), str(INSPECT_DRIVER), llm.url + "/v1", "tiny", json.dumps(answer), str(logs)],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
            env={**os.environ, "LOCAL_API_KEY": "none"},
        )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["inspect_ai"] == INSPECT_VERSION  # the pinned release ran, not some other
    assert result["scores"]["accuracy"] == pytest.approx(0.5)
    assert "stderr" in result["scores"]
    assert list(logs.iterdir())  # Inspect's own log, where the harness said
