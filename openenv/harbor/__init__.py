"""``openenv.harbor``: upstream OpenEnv's Harbor names over this project's terminal env.

Upstream runs Harbor's own agents and sandboxes behind these names; here the terminal
env serves Harbor task folders and datasets itself (docs/harbor.md) and a rollout is one
``openenv eval`` episode played by one of our policies. A name layer: every behaviour is
the terminal env's (``terminal_env._rollout``, ``_datasets``) or ``openenv.eval``'s.

    from openenv.harbor import HarborEnv
    with HarborEnv(base_url="http://127.0.0.1:8000") as env:
        result = env.run_rollout(split="train", task_index=0, harness="oracle")
        print(result.reward, result.rewards)

``HarborEnvironment`` (the server side: the terminal env with ``configure(datasets=)``,
the Task API, and upstream's ``run_rollout`` / ``list_tasks`` tools answered as
``call_tool`` steps), ``HarborEnv`` (the client: Task API reads and ``run_rollout``),
``HarborRolloutResult`` / ``HarborTaskRef`` / ``HarborTurn`` (upstream's wire types),
``to_training_trace`` (a train rollout as the capture proxy's ``TrainingTrace``),
``load_atif`` / ``write_atif`` / ``merge_into_atif`` (ATIF read, written, and given the
capture's token ids). Needs the terminal env package (``openenv-terminal-env``).
"""

from .._lazy import lazy_exports as _lazy_exports

_LAZY = {
    "HarborEnvironment": ".environment",
    "HarborEnv": ".client",
    "HarborRolloutResult": ".models",
    "HarborState": ".models",
    "HarborTaskRef": ".models",
    "HarborTurn": ".models",
    "to_training_trace": ".contract",
    "load_atif": ".atif",
    "merge_into_atif": ".atif",
    "write_atif": ".atif",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = _lazy_exports(
    __name__,
    _LAZY,
    __all__,
    missing={
        "HarborTaskProvider": "tasks come from the terminal env's task set (folders, dataset.toml, registry)",
        "reconcile": "no cross-check of a capture against a harness's own token counts here",
    },
)
