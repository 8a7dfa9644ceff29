"""Evaluate a policy on an env: ``openenv eval`` and its Python API.

    from openenv.eval import EvalConfig, run_eval
    results = run_eval(EvalConfig(env="envs/echo_env", policy="random", out="runs/echo", samples=4))
    print(results["pass_at_k"], results["mean_reward"], results["reward_ci95"])

A run plays every (task, sample) pair of a task selection with a policy
(``openenv.policy``), appends one ``Trajectory`` a line to ``OUT/trajectories.jsonl``
as each episode ends, and writes ``OUT/results.json``: pass@k for every k up to the
samples (Chen et al.'s unbiased estimator), avg@k, the mean reward with a bootstrap
95% interval, per task and per category, tokens, and time split into policy and env.
``write_report(dir)`` writes one static HTML page; ``rescore(dir, rubric, out)``
recomputes the rewards of a run without sampling again (an LLM judge included);
``export(dir, "atif")`` writes Harbor's ATIF and ``export(dir, "upstream")`` upstream
``openenv collect``'s ``results.jsonl`` (``to_atif`` / ``to_upstream`` convert one
trajectory); ``load_dataset(dir)`` gives the trajectories as a ``datasets.Dataset`` and
``push_to_hub(dir, repo)`` uploads them as a Hub dataset.
``OpenEnvHarness`` and ``InspectAIHarness`` are the harness interface of upstream's
``openenv.core.evals`` (``HarnessConfig`` in, ``HarnessResult`` out) over this runner
and over Inspect AI's ``eval()``.
"""

from ._export import export, to_atif, to_upstream
from ._harness import EvalHarness, HarnessConfig, HarnessResult, InspectAIHarness, OpenEnvHarness
from ._metrics import PassRule, bootstrap_ci, pass_at_k, summarize
from ._push import push_to_hub
from ._report import write_report
from ._rescore import rescore
from ._runner import EvalConfig, episode_seed, run_eval, run_eval_async, write_results
from ._tasks import TaskRef, TaskSelection
from ._trajectory import Trajectory, Turn, load_dataset, load_trajectories

__all__ = [
    "EvalConfig",
    "EvalHarness",
    "HarnessConfig",
    "HarnessResult",
    "InspectAIHarness",
    "OpenEnvHarness",
    "PassRule",
    "TaskRef",
    "TaskSelection",
    "Trajectory",
    "Turn",
    "bootstrap_ci",
    "episode_seed",
    "export",
    "load_dataset",
    "load_trajectories",
    "pass_at_k",
    "push_to_hub",
    "rescore",
    "run_eval",
    "run_eval_async",
    "summarize",
    "to_atif",
    "to_upstream",
    "write_report",
    "write_results",
]
