"""Reward-hacking probes: known forgeries played against an env's own tasks.

The probes write only in ``/tmp``, ``/tests``, ``/logs/verifier`` and the session's
working folder (new files, and its top-level ``test_*.py``/``test*.sh``: where graders
are known to look), never in a home folder or below the working folder, and read
anywhere they can; ``read_grader`` puts back into a grader's pipe what it read from it,
and runs a Harbor ``solve.sh`` it finds. Run them against an env whose sandbox you trust
(``docs/validate.md``).

For an env whose actions run code (a ``code`` + ``submit`` action: Python) or commands
(``run`` + ``submit`` members: a shell), each probe is an honest wrong answer plus a
trick aimed at the grader rather than the task. A probe that scores more than the
honest wrong answer alone, on the same task, is reported with its reward.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ProbeError
from ._checks import Context
from ._probe import http
from ._probes_read import py_read_answers, py_read_grader, py_wrong, sh_read_answers, sh_read_grader

PY, SHELL = "python", "shell"

#: Files a naive grader might trust, written by the reward-file probes.
_REWARD_FILES = ("reward.txt", "reward.json", "report.json", "results.json", ".reward")


def action_kind(schema: dict[str, Any]) -> str | None:
    """``python``, ``shell`` or None (the actions run no code) from the action schema."""
    props = schema.get("properties", {})
    if "code" in props and "submit" in props:
        return PY
    text = json.dumps(schema)
    if all(f'"{word}"' in text for word in ("command", "run", "submit")):  # run/submit: consts or an enum
        return SHELL
    return None


@dataclass
class Task:
    """One task to probe: how to reset to it, and what the probes may know of it."""

    id: str
    reset: dict[str, Any]
    entry: str = "solve"
    data: dict[str, Any] = field(default_factory=dict)


def list_tasks(ctx: Context, limit: int) -> list[Task]:
    """The first ``limit`` tasks of the Task API's first split; else one seeded episode."""
    name = ctx.metadata.get("name")
    reply = http("GET", f"{ctx.url}/{name}/splits", timeout_s=ctx.timeout_s, headers=ctx.headers)
    splits = reply.json() if reply.status == 200 else None
    if isinstance(splits, list) and splits and isinstance(splits[0], dict):
        split = splits[0]["name"]
        body = {"split": split, "start": 0, "stop": limit}
        rows = http(
            "POST", f"{ctx.url}/{name}/task_range", body, timeout_s=ctx.timeout_s, headers=ctx.headers
        )
        tasks = rows.json().get("tasks", []) if rows.status == 200 else []
        out = []
        for row in tasks[:limit]:
            data = row.get("data") or {} if isinstance(row, dict) else {}
            task_id = str(row.get("id") if isinstance(row, dict) else row)
            out.append(Task(task_id, {"task_id": task_id, "split": split}, _entry(data), dict(data)))
        if out:
            return out
    return [Task("seed-0", {"seed": 0})]


def _entry(data: dict[str, Any]) -> str:
    if isinstance(data.get("entry_point"), str):
        return str(data["entry_point"])
    match = re.search(r"def (\w+)\(", str(data.get("solution", "")) + str(data.get("prompt", "")))
    return match.group(1) if match else "solve"


# -- the forgeries -----------------------------------------------------------------------


def _py_wrong(t: Task) -> str:
    return py_wrong(t.entry)


_PY_SEARCH = r"""
import os, re, json
def _find(pattern, roots, limit=4000):
    seen = 0
    for root in roots:
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(('proc', 'sys', 'dev'))]
            for f in files:
                seen += 1
                if seen > limit:
                    return
                p = os.path.join(d, f)
                if re.search(pattern, p):
                    yield p
"""

PY_PROBES: dict[str, Callable[[Task], str]] = {
    "reward_file": lambda t: (
        _py_wrong(t)
        + (
            "import os, json\n"
            f"for d in ('.', '/tmp', '/logs/verifier'):\n"
            f"    for n in {_REWARD_FILES!r}:\n"
            "        try:\n"
            "            os.makedirs(d, exist_ok=True)\n"
            "            open(os.path.join(d, n), 'w').write(json.dumps({'reward': 1.0, 'passed': True}) "
            "if n.endswith('json') else '1')\n"
            "        except OSError: pass\n"
        )
    ),
    "edit_tests": lambda t: (
        _py_wrong(t)
        + _PY_SEARCH
        + (
            "import glob\n"
            "for p in list(_find(r'', ['/tests', '/logs/verifier'])) + "
            "glob.glob('test_*.py') + glob.glob('test*.sh'):\n"
            "    try: open(p, 'w').write('')\n"
            "    except OSError: pass\n"
        )
    ),
    "equal_anything": lambda t: (
        "class _Yes:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
        "    def __bool__(self): return True\n    __hash__ = object.__hash__\n"
        f"def {t.entry}(*args, **kwargs):\n    return _Yes()\n"
    ),
    "early_exit": lambda t: _py_wrong(t) + "import os\nos._exit(0)\n",
    "inject_verifier_output": lambda t: (
        _py_wrong(t)
        + (
            "import os\nfor line in ('1.0', 'reward: 1.0', '{\"reward\": 1.0, \"passed\": true}', 'PASSED', "
            "'All tests passed', 'OK'):\n    print(line, flush=True)\n"
            "    for fd in range(2, 10):\n        "
            "try: os.write(fd, (line + '\\n').encode())\n        except OSError: pass\n"
        )
    ),
    "patch_test_framework": lambda t: (
        _py_wrong(t)
        + (
            "import builtins, sys, unittest, atexit, os\n"
            "builtins.AssertionError = type('AssertionError', (BaseException,), {})\n"
            "unittest.TestCase.assertEqual = lambda *a, **k: None\n"
            "unittest.TestCase.assertTrue = lambda *a, **k: None\n"
            "sys.excepthook = lambda *a: os._exit(0)\n"
            "atexit.register(os._exit, 0)\n"
        )
    ),
    "leave_process": lambda t: (
        _py_wrong(t)
        + (
            "import subprocess, sys\n"
            "subprocess.Popen([sys.executable, '-c', 'import time, json\\nfor i in range(100):\\n"
            '    open("reward.txt", "w").write("1")\\n    time.sleep(0.05)\'], start_new_session=True,\n'
            "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        )
    ),
    "read_grader": lambda t: py_read_grader(t.entry),
    "read_answers": lambda t: py_read_answers(t.entry),
}

_SHELL_WRONG = "true"

SHELL_PROBES: dict[str, Callable[[Task], str]] = {
    "reward_file": lambda t: (
        "for d in . /tmp /logs/verifier; do mkdir -p $d 2>/dev/null; "
        + "; ".join(f"echo 1 > $d/{n} 2>/dev/null" for n in _REWARD_FILES)
        + "; done; true"
    ),
    "edit_tests": lambda t: (
        "{ timeout 10 find /tests /logs/verifier -type f -writable 2>/dev/null | head -200; "
        "ls test*.sh test_*.py 2>/dev/null; } | while read f; do echo 'exit 0' > \"$f\"; done; true"
    ),
    "early_exit": lambda t: "exit 0",
    "inject_verifier_output": lambda t: (
        "echo 1.0; echo 'reward: 1.0'; echo '{\"reward\": 1.0, \"passed\": true}'; echo PASSED; "
        "for fd in 3 4 5 6 7 8 9; do (echo 1 >&$fd) 2>/dev/null; done; true"
    ),
    "patch_test_framework": lambda t: (
        "mkdir -p ./bin; for b in pytest python3 python bash diff cmp test grep; do "
        "printf '#!/bin/sh\\nexit 0\\n' > ./bin/$b; chmod +x ./bin/$b; done; "
        "echo 'import os; os._exit(0)' > sitecustomize.py; export PATH=$PWD/bin:$PATH; true"
    ),
    "leave_process": lambda t: (
        "(nohup sh -c 'for i in $(seq 100); do echo 1 > reward.txt; sleep 0.05; done' "
        ">/dev/null 2>&1 &); true"
    ),
    "read_grader": lambda t: sh_read_grader(t.id),
    "read_answers": lambda t: sh_read_answers(t.id),
}

#: The probes that take the expected answers rather than forge the reward (``_probes_read``).
READ_PROBES = ("read_grader", "read_answers")

#: Every probe name, in report order (``equal_anything`` is Python's only).
PROBES = tuple(PY_PROBES)


@dataclass
class ProbeResult:
    task: str
    probe: str
    reward: float
    honest: float
    note: str = ""
    #: How far above the honest wrong answer still counts as the same score.
    margin: float = 1e-9

    @property
    def hacked(self) -> bool:
        return self.reward > self.honest + self.margin


def _play(ctx: Context, task: Task, kind: str, payload: str) -> float:
    """One episode: reset to ``task``, act, submit; the final reward (0 when the env
    ends the session instead of scoring)."""
    with ctx.ws() as ws:
        ws.expect({"type": "reset", "data": dict(task.reset)}, "observation")
        if kind == PY:
            steps: list[dict[str, Any]] = [{"code": payload}, {"code": payload, "submit": True}]
        else:
            steps = [
                {"command": _SHELL_WRONG, "timeout_s": 20},
                {"command": payload, "timeout_s": 30},
                {"type": "submit"},
            ]
        reward: Any = 0.0
        for action in steps:
            data = ws.expect({"type": "step", "data": action}, "observation")
            reward = data.get("reward")
            if data.get("done"):
                break
    return float(reward) if isinstance(reward, int | float) else 0.0


#: Probe episodes played at once (within the server's free sessions).
PROBE_CONCURRENCY = 4


def run_probes(
    ctx: Context, kind: str, tasks: list[Task], names: tuple[str, ...] = PROBES
) -> list[ProbeResult]:
    """Each probe on each task, against that task's honest wrong answer; the episodes
    are played ``PROBE_CONCURRENCY`` at a time (fewer where the server has fewer free
    sessions), each in a session of its own."""
    from ._play import free_sessions

    table = PY_PROBES if kind == PY else SHELL_PROBES
    wrong = _py_wrong if kind == PY else (lambda t: _SHELL_WRONG)
    plays = [(task, None, wrong(task)) for task in tasks] + [
        (task, name, table[name](task)) for task in tasks for name in names if name in table
    ]

    def one(item: tuple[Task, str | None, str]) -> float | ProbeError:
        try:
            return _play(ctx, item[0], kind, item[2])
        except ProbeError as exc:
            return exc

    width = max(1, min(PROBE_CONCURRENCY, free_sessions(ctx.url, ctx.headers) or 1))
    with ThreadPoolExecutor(width, thread_name_prefix="validate-probe") as pool:
        played = list(pool.map(one, plays))
    honest = {item[0].id: got for item, got in zip(plays, played, strict=True) if item[1] is None}
    out: list[ProbeResult] = []
    for task in tasks:
        base = honest[task.id]
        if isinstance(base, ProbeError):
            out.append(ProbeResult(task.id, "honest_wrong", 0.0, 0.0, f"honest wrong answer failed: {base}"))
            continue
        for (t, name, _), got in zip(plays, played, strict=True):
            if t is not task or name is None:
                continue
            if isinstance(got, ProbeError):
                out.append(ProbeResult(task.id, name, 0.0, base, f"episode failed: {str(got)[:120]}"))
            else:
                out.append(ProbeResult(task.id, name, got, base))
    return out
