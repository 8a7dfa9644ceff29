"""Run in the Inspect side venv (scripts/side_venvs.sh inspect), not .venv: Inspect AI's
own ``eval()`` through ``openenv.core.evals.InspectAIHarness``, with Inspect's generic
OpenAI-compatible provider (``openai-api/local/<model>``) against a chat server.

    python drive_inspect.py BASE_URL MODEL ANSWER_JSON LOG_DIR

Two samples: "1 + 1 =" whose target is ANSWER (a JSON string: argv holds no NUL), and
"2 + 2 =" whose target no reply can contain. Prints the harness's result as one JSON line:
its scores and Inspect's version."""

from __future__ import annotations

import json
import os
import sys


def main(base_url: str, model: str, answer: str, log_dir: str) -> None:
    import inspect_ai
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    from openenv.core.evals import EvalConfig, InspectAIHarness

    os.environ.setdefault("LOCAL_API_KEY", "none")  # Inspect's openai-api/local provider reads it
    task = inspect_ai.Task(
        dataset=[Sample(input="1 + 1 =", target=answer), Sample(input="2 + 2 =", target="\x00never")],
        solver=generate(),
        scorer=includes(),
    )
    config = EvalConfig(
        harness_name="inspect_ai",
        harness_version=inspect_ai.__version__,
        library_versions={},
        dataset="inline",
        eval_parameters={
            "task": task,
            "model": f"openai-api/local/{model}",
            "model_base_url": base_url,
            "temperature": 0.0,
            "max_tokens": 4,
            "max_connections": 2,
        },
    )
    result = InspectAIHarness(log_dir=log_dir).run_from_config(config)
    print(json.dumps({"scores": result.scores, "inspect_ai": inspect_ai.__version__}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])
