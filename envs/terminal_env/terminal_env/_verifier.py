"""Scoring a task: its checks run in fresh sandboxed processes, never in the agent's shell.

A task's ``tests/checks.toml`` is the verifier the graded code cannot reach (see
docs/sandbox.md, "Graders the graded code cannot reach"): each check is its own
process, started after every process of the agent (and of the check before) is
killed, with no reward path, no log dir and no copy of the tests in the sandbox. A
check passes when it exits 0, or, with ``stdout``, when what it printed is exactly
that text: compared here, so the expected output never enters the sandbox. The
reward is the fraction of checks passed, decided here from what crossed the boundary.
Python in a check imports nothing from the working directory or the user site under
``$HOME`` (``CHECK_ENV``; both are the agent's, and a ``json/`` there would answer
for the standard library): a check that means to import the agent's module says so
with ``PYTHONPATH=.``.

A Harbor ``tests/test.sh`` (no ``checks.toml``) is trusted instead: its reward file
and TAP lines are believed, so programs of the agent that it runs can forge them.
Use ``checks.toml`` for any task whose tests run the agent's programs.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv.sandbox import Completed, Sandbox

from ._tasks import Check, TerminalTask

#: Added to a check's environment: Python (3.11+) does not put the working directory or
#: the script's folder first on ``sys.path``, nor read the user site; git reads no
#: replace refs (``git replace`` would show other objects under a commit's name) and no
#: global or system config (``~/.gitconfig`` is the agent's).
CHECK_ENV = {
    "PYTHONSAFEPATH": "1",
    "PYTHONNOUSERSITE": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}

_TAP = re.compile(rb"^(not ok|ok)\b[ \t]*(\d*)[ \t]*-?[ \t]*(.*)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The reward and where it came from (``checks``; for a ``test.sh``: ``reward.txt``,
    ``tap`` or ``exit_code``; in a task's own container: ``reward.json``,
    ``reward.txt`` or ``error``)."""

    reward: float
    source: str
    passed: int = 0
    total: int = 0
    exit_code: int | None = None
    timed_out: bool = False
    output: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)  # named rewards (reward.json)
    error: str = ""  # why the verifier gave no reward (a task's fault, not the agent's)

    def breakdown(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"rewards": self.rewards} if self.rewards else {}
        if self.error:
            extra["error"] = self.error
        return {
            **extra,
            "reward": self.reward,
            "source": self.source,
            "tests_passed": self.passed,
            "tests_total": self.total,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "tests": self.results,
        }


def score(stdout: bytes, exit_code: int | None, reward_file: Path) -> tuple[float, str, list[dict[str, Any]]]:
    """``reward.txt`` if the tests wrote one, else the fraction of TAP lines that
    passed, else 1.0 for exit code 0."""
    results = [
        {"name": m[3].decode(errors="replace").strip(), "passed": m[1] == b"ok"}
        for m in _TAP.finditer(stdout)
    ]
    if reward_file.is_file() and not reward_file.is_symlink():
        try:
            value = float(reward_file.read_text(errors="replace").split()[0])
        except (ValueError, IndexError):
            return 0.0, "reward.txt (unreadable)", results
        return min(1.0, max(0.0, value)), "reward.txt", results
    if results:
        return sum(1 for r in results if r["passed"]) / len(results), "tap", results
    return (1.0 if exit_code == 0 else 0.0), "exit_code", results


async def verify(sandbox: Sandbox, task: TerminalTask, *, timeout_s: float | None = None) -> Verdict:
    """Stop the agent's processes, then run the task's checks (or its ``test.sh``)."""
    if task.checks:
        return await run_checks(sandbox, task.checks, timeout_s=timeout_s or task.verifier_timeout_s)
    return await run_test_sh(sandbox, task, timeout_s=timeout_s)


async def run_checks(sandbox: Sandbox, checks: tuple[Check, ...], *, timeout_s: float) -> Verdict:
    """Each check in a fresh process after killing every other; verdicts decided here."""
    deadline = time.monotonic() + timeout_s
    results: list[dict[str, Any]] = []
    lines: list[str] = []
    for i, check in enumerate(checks, 1):
        await asyncio.to_thread(sandbox.kill)
        left = deadline - time.monotonic()
        passed, why = False, "the verifier ran out of time"
        if left > 0:
            done = await sandbox.arun(
                ["bash", "-c", check.run], env=CHECK_ENV, timeout_s=left, output_limit=64 << 10
            )
            passed, why = _judge(check, done)
        results.append({"name": check.name, "passed": passed})
        lines.append(f"{'ok' if passed else 'not ok'} {i} - {check.name}" + ("" if passed else f" ({why})"))
    await asyncio.to_thread(sandbox.kill)
    passed_n = sum(1 for r in results if r["passed"])
    return Verdict(
        reward=passed_n / len(results),
        source="checks",
        passed=passed_n,
        total=len(results),
        output="\n".join(lines)[-8000:],
        results=results,
    )


def _judge(check: Check, done: Completed) -> tuple[bool, str]:
    if done.timed_out:
        return False, "timed out"
    if check.stdout is not None:
        ok = not done.stdout_omitted and done.stdout.rstrip(b"\n") == check.stdout.encode()
        return ok, "" if ok else "unexpected output"
    return done.exit_code == 0, f"exit status {done.exit_code}"


async def run_test_sh(sandbox: Sandbox, task: TerminalTask, *, timeout_s: float | None = None) -> Verdict:
    """Stop the agent's processes, then run a Harbor ``tests/test.sh`` (trusted: see
    the module docstring) on its working directory.

    The tests are a private copy (the agent cannot have changed them); under
    bubblewrap they appear at ``/tests`` and the log dir at ``/logs/verifier``
    (Harbor's paths), else at host paths; ``$TESTS_DIR`` and ``$LOGS_DIR`` say where.
    """
    await asyncio.to_thread(sandbox.kill)
    scratch = sandbox.root / f"verifier-{secrets.token_hex(4)}"
    await asyncio.to_thread(_prepare, task, scratch, sandbox.uid)
    tests = sandbox.visible_path("/tests", scratch / "tests")
    logs = sandbox.visible_path("/logs/verifier", scratch / "logs")
    done = await sandbox.arun(
        ["bash", f"{tests}/test.sh"],
        env={"TESTS_DIR": tests, "LOGS_DIR": logs, "REWARD_FILE": f"{logs}/reward.txt"},
        timeout_s=timeout_s or task.verifier_timeout_s,
        ro_binds={"/tests": str(scratch / "tests")},
        binds={"/logs/verifier": str(scratch / "logs")},
        output_limit=256 << 10,
    )
    reward, source, results = score(done.stdout, done.exit_code, scratch / "logs" / "reward.txt")
    await asyncio.to_thread(shutil.rmtree, scratch, True)
    text = (done.stdout + done.stderr).decode("utf-8", errors="replace")
    return Verdict(
        reward=0.0 if done.timed_out else reward,
        source=source,
        passed=sum(1 for r in results if r["passed"]),
        total=len(results),
        exit_code=done.exit_code,
        timed_out=done.timed_out,
        output=text[-8000:],
        results=results,
    )


def _prepare(task: TerminalTask, scratch: Path, uid: int) -> None:
    scratch.mkdir(mode=0o700)
    shutil.copytree(task.tests_dir, scratch / "tests")
    (scratch / "logs").mkdir()
    if os.geteuid() == 0:
        for path in (scratch, scratch / "logs"):
            os.chown(path, uid, uid)
        for dirpath, _dirs, files in os.walk(scratch / "tests"):
            os.chmod(dirpath, 0o755)
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644 if not name.endswith(".sh") else 0o755)
