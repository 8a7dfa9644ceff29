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
        """Run ``solution`` against ``tests`` in a new sandbox."""
        return self.grade_many([(solution, tests)])[0]

    def grade_many(self, jobs: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[Grade]:
        """Grade many ``(solution, tests)`` pairs in one new sandbox: one interpreter,
        each job in its own forked child (a batch of samples, or a test suite)."""
        if not jobs:
            return []
        payload = []
        budgets = []
        for solution, tests in jobs:
            budget = min(self.timeout_s, self.test_timeout_s * (len(tests) + 1) + 1.0)
            budgets.append(budget)
            payload.append(
                {
                    "solution": solution,
                    "tests": [{"name": str(t["name"]), "code": str(t["code"])} for t in tests],
                    "test_timeout_s": self.test_timeout_s,
                    "timeout_s": budget,
                }
            )
        with Sandbox(self.config) as box:
            done = box.run(
                [self.python, "-I", "-c", _GRADER_SOURCE],
                input=json.dumps({"jobs": payload}).encode(),
                timeout_s=sum(budgets) + 10.0,
                output_limit=16 << 20,
            )
        report = _last_json_line(done.stdout)
        reports = report.get("reports") if report else None
        if not isinstance(reports, list) or len(reports) != len(jobs):
            why = (
                "the grader ran past its time limit"
                if done.timed_out
                else f"the grader exited with {done.exit_code} and no report"
            )
            return [_failed(tests, why, done.duration_s) for _, tests in jobs]
        single = len(jobs) == 1  # then the whole sandbox run is the honest duration
        return [
            _grade(tests, r, done.duration_s if single else float(r.get("duration_s", 0.0)))
            for (_, tests), r in zip(jobs, reports, strict=True)
        ]


def _failed(tests: Sequence[Mapping[str, Any]], why: str, duration_s: float) -> Grade:
    return Grade(
        tuple(TestResult(str(t["name"]), False, why) for t in tests), None, duration_s, grader_error=why
    )


def _grade(tests: Sequence[Mapping[str, Any]], report: dict[str, Any], duration_s: float) -> Grade:
    if report.get("error"):
        return _failed(tests, str(report["error"]), duration_s)
    by_name = {str(r.get("name")): r for r in report.get("results", []) if isinstance(r, dict)}
    results = tuple(
        TestResult(
            str(t["name"]),
            by_name.get(str(t["name"]), {}).get("passed") is True,
            by_name.get(str(t["name"]), {}).get("error"),
        )
        for t in tests
    )
    return Grade(results, report.get("solution_error"), duration_s)


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
