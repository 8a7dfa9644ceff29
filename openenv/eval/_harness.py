"""Evaluation harnesses behind one interface (upstream's ``openenv.core.evals``).

A harness is ``run(harness_version, library_versions, dataset, eval_parameters) ->
scores``; ``run_from_config(HarnessConfig)`` returns a ``HarnessResult`` (the config and
its scores), a record that says exactly what was run with which versions.

* ``OpenEnvHarness``: ``openenv eval`` itself. ``dataset`` is the env (anything
  ``openenv eval`` takes); ``eval_parameters`` are ``EvalConfig``'s fields (``policy``,
  ``out``, ``samples``, ``count``, ...); the scores are the run's figures (``pass@k``,
  ``avg@k``, ``mean_reward``, ``errors``, ...).
* ``InspectAIHarness``: Inspect AI's ``eval()`` (the ``inspect-ai`` package, imported
  when it runs). ``dataset`` is the task (a file, a registry name or a ``Task``) unless
  ``eval_parameters["task"]`` names one; ``model`` is required; ``task_args``,
  ``model_args``, ``max_samples``, ``max_connections``, ``temperature``, ``max_tokens``,
  ``epochs``, ``solver``, ``scorer`` and ``model_base_url`` go through to ``eval()``.
  The scores are every scorer's metrics, flattened by name.
"""

from __future__ import annotations

import abc
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._exceptions import EvalError

_INSPECT_DICTS = ("task_args", "model_args")
_INSPECT_OPTIONS = (
    "max_samples",
    "max_connections",
    "temperature",
    "max_tokens",
    "epochs",
    "solver",
    "scorer",
    "model_base_url",
)


class HarnessConfig(BaseModel):
    """What one harness run was: the harness, its version, library versions, the
    dataset and the parameters (upstream's ``EvalConfig``)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    harness_name: str = Field(description="Name of the evaluation harness")
    harness_version: str = Field(description="Version of the evaluation harness")
    library_versions: dict[str, str] = Field(description="Versions of libraries used in the evaluation")
    dataset: str = Field(description="Name of the dataset to evaluate on")
    eval_parameters: dict[str, Any] = Field(description="Parameters for the evaluation")


class HarnessResult(BaseModel):
    """A config and the scores it gave (upstream's ``EvalResult``)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    config: HarnessConfig = Field(description="Configuration used for the evaluation")
    scores: dict[str, Any] = Field(description="Scores from the evaluation")


class EvalHarness(abc.ABC):
    """A harness: ``run`` returns scores; ``run_from_config`` wraps them with the config."""

    @abc.abstractmethod
    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        """Run the evaluation; the scores by name."""

    def run_from_config(self, config: HarnessConfig) -> HarnessResult:
        scores = self.run(
            harness_version=config.harness_version,
            library_versions=config.library_versions,
            dataset=config.dataset,
            eval_parameters=config.eval_parameters,
        )
        return HarnessResult(config=config, scores=scores)

    @property
    def name(self) -> str:
        return type(self).__name__


class OpenEnvHarness(EvalHarness):
    """``openenv eval`` as a harness (see the module docstring)."""

    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        from ._runner import EvalConfig, run_eval

        params = dict(eval_parameters)
        for required in ("policy", "out"):
            if required not in params:
                raise EvalError(f"eval_parameters must include {required!r}")
        try:
            cfg = EvalConfig(env=dataset, **params)
        except TypeError as exc:
            raise EvalError(f"eval_parameters: {exc}") from None
        results = run_eval(cfg)
        scores = {f"pass@{k}": v for k, v in results["pass_at_k"].items()}
        scores |= {f"avg@{k}": v for k, v in results["avg_at_k"].items()}
        keys = ("mean_reward", "reward_ci95", "episodes", "errors", "timeouts", "tasks")
        return scores | {k: results[k] for k in keys if k in results}


class InspectAIHarness(EvalHarness):
    """Inspect AI's ``eval()`` as a harness (see the module docstring); ``log_dir``:
    where Inspect writes its logs (its default when None)."""

    def __init__(self, *, log_dir: str | None = None) -> None:
        self.log_dir = log_dir

    def run(
        self,
        harness_version: str,
        library_versions: dict[str, str],
        dataset: str,
        eval_parameters: dict[str, Any],
    ) -> dict[str, Any]:
        model = eval_parameters.get("model")
        if model is None:
            raise EvalError("eval_parameters must include 'model' (e.g. 'openai/gpt-4o', 'mockllm/model')")
        try:
            from inspect_ai import eval as inspect_eval
        except ImportError:
            raise ImportError("InspectAIHarness needs Inspect AI: pip install 'inspect-ai>=0.3.0'") from None
        logs = inspect_eval(
            eval_parameters.get("task", dataset), model=model, **self.eval_kwargs(eval_parameters)
        )
        if not logs:
            raise EvalError("Inspect AI returned no logs: check the task and the model arguments")
        log: Any = logs[0]
        if log.status != "success":
            detail = f": {log.error.message}" if getattr(log, "error", None) is not None else ""
            raise EvalError(f"Inspect AI evaluation failed with status: {log.status}{detail}")
        return self.scores(log)

    def eval_kwargs(self, eval_parameters: dict[str, Any]) -> dict[str, Any]:
        """What goes through to ``inspect_ai.eval`` besides the task and the model."""
        kwargs = {k: eval_parameters[k] for k in _INSPECT_DICTS if eval_parameters.get(k)}
        kwargs |= {k: eval_parameters[k] for k in _INSPECT_OPTIONS if eval_parameters.get(k) is not None}
        if self.log_dir is not None:
            kwargs["log_dir"] = self.log_dir
        return kwargs

    @staticmethod
    def scores(log: Any) -> dict[str, Any]:
        """Every scorer's metrics, flattened by metric name."""
        if log.results is None:
            return {}
        return {name: metric.value for s in log.results.scores for name, metric in s.metrics.items()}
