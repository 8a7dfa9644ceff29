"""The Harbor files of a task scored by ``tests/checks.toml``: ``environment/Dockerfile``
and ``tests/test.sh``, so that Harbor (which knows neither ``checks.toml``, ``workdir/``
nor ``setup.sh``) runs the built-in tasks as they are.

This env does not use these files for such a task: it runs it sandboxed, without Docker,
each check in a fresh process judged outside the sandbox (_verifier.py). Harbor builds
the Dockerfile (the task's ``workdir/`` files in ``/app``, its ``setup.sh`` run there,
``git`` added where ``requires`` names it) and runs ``test.sh`` in the agent's container
after its turn: each check from ``/app`` with the same environment as here, the reward
the fraction that passed, as here. The committed files are these functions' output
(tests/test_terminal_tasks.py checks it): change them here, then run
``python -m terminal_env._harbor_files`` to write them again.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ._tasks import TASKS_DIR, TerminalTask, task_dirs
from ._verifier import CHECK_ENV

_GIT = (
    "# git, unless the base has it (offline, map FROM to a local image that does)\n"
    "RUN command -v git >/dev/null || (apt-get update && apt-get install -y --no-install-recommends git \\\n"
    "    && rm -rf /var/lib/apt/lists/*)\n"
)

_TEST_SH = """#!/bin/bash
# Harbor's verifier for this task: each check of checks.toml (beside this file) runs on
# its own from the working directory; the reward is the fraction that passed. The
# terminal env runs the same checks itself, sandboxed, and does not use this file.
python3 - "$(dirname "$0")/checks.toml" <<'PY'
import os, subprocess, sys, tomllib

checks = tomllib.load(open(sys.argv[1], "rb"))["check"]
env = dict(os.environ, **ENV)
passed = 0
for i, check in enumerate(checks, 1):
    try:
        done = subprocess.run(["bash", "-c", check["run"]], capture_output=True, env=env, timeout=30)
    except subprocess.TimeoutExpired:
        ok = False
    else:
        want = check.get("stdout")
        ok = done.returncode == 0 if want is None else done.stdout.rstrip(b"\\n") == want.encode()
    passed += ok
    print("ok" if ok else "not ok", i, "-", check["name"])
with open("/logs/verifier/reward.txt", "w") as f:
    f.write(f"{passed / len(checks)!r}\\n")  # every digit: the same float as this env's
PY
"""


def dockerfile(task: TerminalTask) -> str:
    """The task's ``environment/Dockerfile`` for Harbor."""
    lines = ["FROM python:3.11-slim", ""]
    if "git" in task.requires:
        lines.append(_GIT)
    lines.append("WORKDIR /app")
    if task.workdir_files is not None:
        lines.append("COPY workdir/ /app/")
    if task.setup_script is not None:
        lines.append("COPY setup.sh /tmp/setup.sh")
        lines.append("RUN bash /tmp/setup.sh && rm /tmp/setup.sh")
    return "\n".join(lines) + "\n"


def test_sh() -> str:
    """``tests/test.sh`` (the same for every such task)."""
    return _TEST_SH.replace("**ENV", "**" + repr(CHECK_ENV))


def harbor_files(task: TerminalTask) -> dict[str, str]:
    """Relative path -> text of the files Harbor needs beside the task's own."""
    return {"environment/Dockerfile": dockerfile(task), "tests/test.sh": test_sh()}


def write(root: Path = TASKS_DIR) -> list[Path]:
    """Write the Harbor files of every checks.toml task under ``root``; the paths changed."""
    changed = []
    for path in task_dirs(root):
        if not (path / "tests" / "checks.toml").is_file():
            continue
        for rel, text in harbor_files(TerminalTask.from_dir(path)).items():
            out = path / rel
            if not out.is_file() or out.read_text() != text:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(text)
                changed.append(out)
    return changed


if __name__ == "__main__":
    for changed in write(Path(sys.argv[1]) if len(sys.argv) > 1 else TASKS_DIR):
        print(changed)
