"""Hidden tests on the grader's side of a sandbox: reward = fraction passed.

The solution runs in a fresh sandbox of its own (``_remote.SolutionProcess``); the
tests run here, in the grader's process, and reach the solution only through calls
whose results come back as plain values (``_remote.Remote``). So the tests and their
expected values never enter a process the solution controls, no object of the
solution's is ever compared here, and ``==`` in a test is exact: types must match at
every level (``openenv.rewards._plain.exact_equal``). Each call sends a copy of its
arguments, and nothing the solution does to that copy comes back into the test's own
values: a test compares against values the solution never held (one that checks what
a call changed in place asks for ``args_after()``, a copy). See docs/sandbox.md,
"Graders the graded code cannot reach".

The agent sees each hidden test by name and pass/fail only (``Grade.to_json``): an
error line can carry the test's inputs (a solution raises ``ValueError(repr(nums))``).
"""

from __future__ import annotations

import ast
import builtins
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openenv.rewards._plain import exact_equal
from openenv.sandbox import SandboxConfig

from ._remote import SolutionLost, SolutionProcess, args_after, lookup

_SHUT = "the grader was shut down (the server is stopping)"
#: Names a test gets from the grader, never from the solution.
_GRADER_NAMES = frozenset({"__exact_equal__", "args_after"})


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
        """What the agent sees: each hidden test's name and whether it passed (never
        its error line, which may show the test's inputs)."""
        return {
            "passed": self.passed,
            "total": len(self.results),
            "solution_error": self.solution_error,
            "grader_error": self.grader_error,
            "duration_s": round(self.duration_s, 4),
            "tests": [{"name": r.name, "passed": r.passed} for r in self.results],
        }


class Grader:
    """Runs hidden tests against a solution that lives in a new sandbox each time.

    The tests never leave this process: the solution's sandbox sees only the calls
    they make (the arguments), never the code or the expected values.
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
        self.closed = False
        self._lock = threading.Lock()
        self._live: weakref.WeakSet[SolutionProcess] = weakref.WeakSet()

    def close(self) -> None:
        """Kill every grading in progress (its remaining tests fail at once) and start no
        new solution process: a server shutting down waits for no grading."""
        for proc in self.shut():
            proc.kill()

    def shut(self) -> list[SolutionProcess]:
        """Start no new solution process; the ones running now, for the caller to kill."""
        with self._lock:
            self.closed = True
            return list(self._live)

    def start(self, solution: str, deadline: float) -> SolutionProcess:
        """A solution process, tracked so that ``close`` can kill it."""
        if self.closed:
            raise SolutionLost(_SHUT)
        proc = SolutionProcess(self.config, python=self.python, deadline=deadline)
        with self._lock:
            tracked = not self.closed
            if tracked:
                self._live.add(proc)
        if not tracked:
            proc.close()
            raise SolutionLost(_SHUT)
        try:
            proc.load(solution)
        except BaseException:
            proc.close()
            raise
        return proc

    def grade(self, solution: str, tests: Sequence[Mapping[str, Any]]) -> Grade:
        """Run ``tests`` against ``solution``; each test in a fresh fork of it."""
        start = time.monotonic()
        budget = min(self.timeout_s, self.test_timeout_s * (len(tests) + 1) + 1.0)
        run = _Run(self, solution, start + budget)
        try:
            results = tuple(run.test(str(t["name"]), str(t["code"])) for t in tests)
        finally:
            run.close()
        return Grade(results, run.solution_error, time.monotonic() - start)

    def grade_many(self, jobs: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[Grade]:
        """Grade many ``(solution, tests)`` pairs, one after the other."""
        return [self.grade(solution, tests) for solution, tests in jobs]


class _Run:
    """One grading: the solution's process (restarted after a test that lost it)."""

    def __init__(self, grader: Grader, solution: str, deadline: float) -> None:
        self.grader = grader
        self.solution = solution
        self.deadline = deadline
        self.proc: SolutionProcess | None = None
        self.solution_error: str | None = None

    def test(self, name: str, code: str) -> TestResult:
        if self.solution_error is not None:
            return TestResult(name, False, f"the solution failed to run: {self.solution_error}")
        if time.monotonic() >= self.deadline:
            return TestResult(name, False, "the grading ran past its time limit")
        try:
            if self.proc is None:
                self.proc = self.grader.start(self.solution, self.deadline)
                self.solution_error = self.proc.error
                if self.solution_error is not None:
                    return self.test(name, code)
            error = self._run(self.proc, *_compile(code, name))
        except SolutionLost as lost:
            error = str(lost)
            self.close()  # the next test gets a fresh sandbox
        return TestResult(name, error is None, error)

    def _run(self, proc: SolutionProcess, code: Any, names: list[str]) -> str | None:
        proc.begin(min(self.deadline, time.monotonic() + self.grader.test_timeout_s))
        namespace: dict[str, Any] = {
            "__builtins__": builtins,
            "__exact_equal__": exact_equal,
            "args_after": lambda: args_after(proc),
        }
        error: str | None = None
        try:
            for free in names:
                namespace[free] = lookup(proc, free)
            exec(code, namespace)
        except SolutionLost:
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}".strip()[:2000]
        proc.end()
        return error

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.close()


class _ExactEquality(ast.NodeTransformer):
    """``a == b`` becomes ``__exact_equal__(a, b)`` (and ``!=`` its negation)."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq | ast.NotEq):
            return node
        call: ast.expr = ast.Call(
            ast.Name("__exact_equal__", ast.Load()), [node.left, node.comparators[0]], []
        )
        if isinstance(node.ops[0], ast.NotEq):
            call = ast.UnaryOp(ast.Not(), call)
        return ast.copy_location(call, node)


def _compile(code: str, name: str) -> tuple[Any, list[str]]:
    """A test's code with exact ``==``, and the names it takes from the solution
    (those it reads without assigning, builtins aside)."""
    tree = _ExactEquality().visit(ast.parse(code, f"<test {name}>", "exec"))
    ast.fix_missing_locations(tree)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    stored |= {
        a.asname or a.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    stored |= {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.ExceptHandler)
        if n.name
    }
    loaded = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    free = {n for n in loaded if n not in stored and not hasattr(builtins, n)}
    return compile(tree, f"<test {name}>", "exec"), sorted(free - _GRADER_NAMES)
