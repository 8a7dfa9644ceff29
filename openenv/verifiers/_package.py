"""``openenv import``: a verifiers taskset written out as an env package folder.

The folder is what ``openenv init`` makes (``openenv.yaml``, ``pyproject.toml`` with the
``openenv.envs`` entry point, a README, the Dockerfile) around a thin env module: a
``VerifiersEnv`` subclass whose ``task_set`` names the taskset, its config and splits.
``openenv serve <folder>`` and ``openenv validate <folder>`` take it as they are.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._exceptions import InitError
from .._manifest import Manifest
from ._env import env_class
from ._load import REQUIREMENT, module_name

_DOCKERFILE = """\
# {title} image: the shared openenv base plus this env's wheels (`openenv build .`).
# The taskset's own package must be among the wheels too (see README.md).
ARG OPENENV_BASE=openenv-base:latest
FROM ${{OPENENV_BASE}}

USER root
COPY wheels/ /tmp/wheels/
RUN /opt/venv/bin/python3 -m pip install --no-index --no-cache-dir --disable-pip-version-check \\
        --find-links /tmp/wheels /tmp/wheels/*.whl \\
    && rm -rf /tmp/wheels
USER 1000:1000

CMD ["openenv", "serve", "{name}"]
"""

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "The verifiers taskset {taskset} as an openenv env."
requires-python = ">=3.11"
dependencies = {dependencies}

# `openenv serve {name}` (installed) or `openenv serve <this folder>` finds the env here.
[project.entry-points."openenv.envs"]
{name} = "{name}:{cls}"

[tool.setuptools]
packages = ["{name}"]
"""

_ENV_MODULE = '''\
"""The verifiers taskset {taskset!r} as an openenv env (written by `openenv import`)."""

from openenv.verifiers import VerifiersEnv, VerifiersTaskSet


class {cls}(VerifiersEnv):
    """One task of the verifiers taskset {taskset!r} per episode, scored by its own rubric."""

    env_name = {name!r}
    task_set = VerifiersTaskSet(
        {taskset!r},
        config={config!r},
        splits={splits!r},
        limit={limit!r},
    )
'''

_INIT = '''\
"""The verifiers taskset {taskset!r} as an openenv env."""

from openenv.verifiers import MODELS, VerifiersAction, VerifiersObservation, VerifiersState

from .env import {cls}

__all__ = ["MODELS", "{cls}", "VerifiersAction", "VerifiersObservation", "VerifiersState"]
'''

_README = """\
# {title}

The [verifiers](https://pypi.org/project/verifiers/) taskset `{taskset}` as an openenv env,
written by `openenv import {taskset} {folder}`. One episode is one task: the reset shows its
prompt (`prompt`, and chat `messages`), the one step takes the model's completion
(`VerifiersAction(completion=...)`) and ends the episode with the reward the task's own
rubric gives it (its rewards, score x weight, are in the observation's `metadata`).
The taskset's {count} tasks are the Task API's tasks (split{plural} {splits}).

| | |
|---|---|
| action | `VerifiersAction(completion: str)` |
| observation | `prompt`, `messages`, `task_id`; after the step `metadata["rewards"]`, `metadata["metrics"]` |
| reward | the task's rubric: the sum of its rewards' score x weight |
| reset options | `task_id`, `index`, `split` (else the seed picks the task) |

```bash
openenv serve .        # needs {requirement} and the taskset's module installed
openenv validate .     # deep conformance check
```

The taskset's module (`{module}`) must be importable where the env runs: installed
({taskset_dist}), or on the path. For `openenv build .` put its wheel among the image's wheels.
"""


def write_env_package(
    taskset: str,
    dest: str | Path,
    *,
    config: Mapping[str, Any] | None = None,
    splits: Mapping[str, Mapping[str, Any]] | None = None,
    limit: int | None = None,
) -> Path:
    """Write the env package folder ``dest`` for verifiers taskset ``taskset``; returns it.

    The taskset is loaded first (its module, config and tasks checked as ``serve`` would:
    ``EnvNotFound``, ``EnvKwargsError``); a ``dest`` that exists and is not empty is
    ``InitError``.
    """
    folder = Path(dest)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InitError(f"{folder} exists and is not an empty folder")
    loaded = env_class(taskset, config=config, splits=splits, limit=limit)
    assert loaded.task_set is not None
    module = module_name(taskset)
    stem = re.sub(r"[^a-z0-9_]+", "_", module.rsplit(".", 1)[-1].lower()).strip("_") or "verifiers"
    name = stem if stem.endswith("_env") else f"{stem}_env"
    if not name[0].isalpha():
        name = f"vf_{name}"
    cls = "".join(part.title() for part in name.split("_") if part)
    title = name.replace("_", " ").title()
    dist = _distribution(module)
    dependencies = ["openenv[verifiers]", *([dist] if dist else [])]
    splits_shown = list(loaded.task_set.split_configs)
    count = sum(loaded.task_set.num_tasks(s) for s in splits_shown)
    package = folder / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "env.py").write_text(_ENV_MODULE.format(
        taskset=taskset, cls=cls, name=name, config=dict(config or {}),
        splits={k: dict(v) for k, v in (splits or {}).items()} or None, limit=limit,
    ))
    (package / "__init__.py").write_text(_INIT.format(taskset=taskset, cls=cls))
    (folder / "pyproject.toml").write_text(_PYPROJECT.format(
        dist=f"openenv-{name.replace('_', '-')}", taskset=taskset, name=name, cls=cls,
        dependencies="[" + ", ".join(f'"{d}"' for d in dependencies) + "]",
    ))
    manifest = Manifest(
        name=name, env=f"{name}:{cls}",
        description=f"The verifiers taskset {taskset}: one task per episode, scored by its own rubric.",
        tags=["openenv", "text", "verifiers"],
    )
    (folder / "openenv.yaml").write_text(manifest.to_yaml())
    (folder / "README.md").write_text(_README.format(
        taskset=taskset, title=title, folder=folder, requirement=REQUIREMENT, module=module,
        count=count, plural="s" if len(splits_shown) > 1 else "", splits=", ".join(splits_shown),
        taskset_dist=f"its distribution: {dist}" if dist else "it is not an installed distribution here",
    ))
    (folder / "Dockerfile").write_text(_DOCKERFILE.format(title=title, name=name))
    return folder


def _distribution(module: str) -> str | None:
    """The installed distribution that provides top-level module ``module``, if one does."""
    top = module.split(".")[0]
    if top == "verifiers":
        return None  # a built-in taskset: verifiers itself
    names = importlib.metadata.packages_distributions().get(top) or []
    return names[0] if names else None
