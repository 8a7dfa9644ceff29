"""Hidden tests, run in a fresh sandbox per grading: reward = fraction passed."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from openenv.sandbox import Sandbox, SandboxConfig

_GRADER_SOURCE = resources.files(__package__).joinpath("_grade_main.py").read_text()


@dataclass(frozen=True, slots=True)
class TestResult:
    """One hidden test: its name, whether it passed, and the error line if not."""

    __test__ = False  # not a pytest class

    name: str
    passed: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Grade:
    """The outcome of one grading; ``reward`` is the fraction of tests passed."""

    results: tuple[TestResult, ...]
    solution_error: str | None
    duration_s: float
    grader_error: str | None = None

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def reward(self) -> float:
        return self.passed / len(self.results) if self.results else 0.0

    def breakdown(self) -> dict[str, float]:
        """Per-test scores, for ``observation.metadata["reward_breakdown"]``."""
        return {r.name: 1.0 if r.passed else 0.0 for r in self.results}

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "total": len(self.results),
            "solution_error": self.solution_error,
            "grader_error": self.grader_error,
            "duration_s": round(self.duration_s, 4),
            "tests": [{"name": r.name, "passed": r.passed, "error": r.error} for r in self.results],
        }


class Grader:
    """Runs a solution against hidden tests in a new sandbox each time.

    The tests reach the grader process on its stdin only: they are never written to
    any filesystem a sandbox can see, least of all the agent's worker.
    """

    def __init__(
        self,
        config: SandboxConfig,
        *,
        python: str,
        timeout_s: float = 60.0,
        test_timeout_s: float = 5.0,
    ) -> None:
        self.config = config
        self.python = python
        self.timeout_s = timeout_s
        self.test_timeout_s = test_timeout_s

    def grade(self, solution: str, tests: Sequence[Mapping[str, Any]]) -> Grade:
        names = [str(t["name"]) for t in tests]
        job = {
            "solution": solution,
            "tests": [{"name": str(t["name"]), "code": str(t["code"])} for t in tests],
            "test_timeout_s": self.test_timeout_s,
        }
        with Sandbox(self.config) as box:
            done = box.run(
                [self.python, "-I", "-c", _GRADER_SOURCE],
                input=json.dumps(job).encode(),
                timeout_s=self.timeout_s,
                output_limit=4 << 20,
            )
        report = _last_json_line(done.stdout)
        if report is None:
            why = (
                f"the grader ran past {self.timeout_s:g} s"
                if done.timed_out
                else f"the grader exited with {done.exit_code} and no report"
            )
            failed = tuple(TestResult(n, False, why) for n in names)
            return Grade(failed, None, done.duration_s, grader_error=why)
        by_name = {str(r.get("name")): r for r in report.get("results", []) if isinstance(r, dict)}
        results = tuple(
            TestResult(n, by_name.get(n, {}).get("passed") is True, by_name.get(n, {}).get("error"))
            for n in names
        )
        return Grade(results, report.get("solution_error"), done.duration_s)


def _last_json_line(stdout: bytes) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None
