"""Runs in the verifiers venv (verifiers 0.4 and this package), with ``qa_taskset`` on the
path. ``argv[1]``: the URL of ``openenv serve verifiers:qa_taskset``; ``argv[2]``: an
empty folder for ``openenv import``.

1. verifiers' own scoring, without openenv: each completion recorded on a ``vf.Trace``
   (system prompt, prompt, the reply) and scored by the task's ``Task.score``.
2. Our client drives the server with the same completions.
3. ``openenv import qa_taskset DEST`` then ``openenv validate DEST``, and the bad inputs,
   through our CLI's ``main`` in this process (verifiers is imported once).

Prints one JSON line with everything the test asserts on.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import urllib.request
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.graph import prepare_turn

from openenv import EnvClient
from openenv.authoring import validate_path
from openenv.cli import main as openenv_main
from openenv.containers import wait_healthy
from openenv.verifiers import MODELS, VerifiersAction

#: (task id, completion): right, right with spaces, partly right and long, wrong.
PLAYS = [("add", "5"), ("add", "  5  "), ("cap", "It is Paris."), ("sq", "42")]


async def verifiers_scores() -> list[dict[str, Any]]:
    taskset = vf.load_taskset(vf.taskset_config_type("qa_taskset")(id="qa_taskset"))
    tasks = {task.data.id: task for task in taskset}
    out = []
    for task_id, completion in PLAYS:
        task = tasks[task_id]
        trace = vf.Trace(
            task=vf.TraceTask(type=type(task).__name__, data=task.data),
            agent=vf.AgentInfo(config=vf.AgentConfig(), name="reference"),
        )
        prompt = [vf.SystemMessage(content=task.data.system_prompt), vf.UserMessage(content=task.data.prompt)]
        reply = vf.Response(id="r", created=0, model="scripted",
                            message=vf.AssistantMessage(content=completion), finish_reason="stop")
        prepare_turn(trace, prompt).commit(reply)
        await task.score(trace)
        out.append({
            "reward": trace.reward,
            "rewards": {k: {"score": r.score, "weight": r.weight} for k, r in trace.rewards.items()},
            "metrics": trace.metrics,
        })
    return out


def served(url: str) -> dict[str, Any]:
    wait_healthy(url, timeout_s=90.0)  # the server starts beside this process
    plays = []
    with EnvClient(url, MODELS) as env:
        for task_id, completion in PLAYS:
            first = env.reset(task_id=task_id)
            last = env.step(VerifiersAction(completion=completion))
            plays.append({
                "prompt": first.observation.prompt,
                "messages": [m.model_dump() for m in first.observation.messages],
                "task_id": first.observation.task_id,
                "reward": last.reward,
                "done": last.done,
                "rewards": last.observation.metadata["rewards"],
                "metrics": last.observation.metadata["metrics"],
            })
        seeded = [env.reset(seed=7).observation.task_id for _ in range(2)]
    request = urllib.request.Request(f"{url}/qa_taskset/tasks", data=b'{"split": "train"}', method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        tasks = json.loads(answer.read())["tasks"]
    return {"plays": plays, "seeded": seeded, "tasks": tasks}


def cli(*argv: str) -> dict[str, Any]:
    """``openenv ARGV`` in this process: its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = openenv_main(list(argv))
        except SystemExit as exc:  # argparse's own errors
            rc = exc.code if isinstance(exc.code, int) else 1
    return {"rc": rc, "out": out.getvalue(), "err": err.getvalue()}


def main(url: str, dest: str) -> dict[str, Any]:
    result: dict[str, Any] = {"verifiers": asyncio.run(verifiers_scores()), **served(url)}
    splits = ("--split", "train={}", "--split", 'test={"split": "test"}')
    result["import"] = cli("import", "qa_taskset", dest, *splits)
    report = validate_path(dest)
    result["validate"] = {"ok": report.ok, "text": report.render()}
    sys.path.insert(0, dest)  # the written package, as `openenv serve DEST` imports it
    from qa_taskset_env import QaTasksetEnv

    tasks = QaTasksetEnv.task_set
    result["imported_splits"] = {split: [t.id for t in tasks.range(split)] for split in tasks.splits}
    result["bad"] = {
        "import_unknown": cli("import", "no_such_taskset_module", f"{dest}-unknown"),
        "import_old_style": cli("import", "old_style_env", f"{dest}-old"),
        "import_taken": cli("import", "qa_taskset", dest),
        "import_bad_field": cli("import", "qa_taskset", f"{dest}-field", "--config", '{"nope": 1}'),
        "import_failing_load": cli("import", "qa_taskset", f"{dest}-load", "--config", '{"split": "dev"}'),
        "serve_unknown": cli("serve", "verifiers:no_such_taskset_module", "--port", "0"),
        "serve_old_style": cli("serve", "verifiers:old_style_env", "--port", "0"),
        "serve_needs_runtime": cli("serve", "verifiers:runtime_taskset", "--port", "0"),
    }
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
