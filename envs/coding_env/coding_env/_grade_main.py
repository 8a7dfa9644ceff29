"""The grader: runs in a fresh sandbox, stdlib only, never in the agent's worker.

Started as ``python -I -c <this source>``; reads one JSON object from stdin
(``solution``: source, ``tests``: ``[{"name", "code"}]``, ``test_timeout_s``), runs the
solution, then each test in a copy of the solution's namespace under its own alarm,
and writes ``{"results": [{"name", "passed", "error"}], "solution_error"}`` as the
last line of its stdout. What the solution prints goes nowhere.
"""

import io
import json
import os
import signal
import sys
import traceback
from types import FrameType
from typing import Any


class TestTimeout(BaseException):
    pass


def on_alarm(signum: int, frame: FrameType | None) -> None:
    raise TestTimeout


def run(code: str, namespace: dict[str, Any], filename: str, timeout_s: float) -> str | None:
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        exec(compile(code, filename, "exec"), namespace)
        return None
    except TestTimeout:
        return f"timed out after {timeout_s:g} s"
    except BaseException as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return last[:2000]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main() -> None:
    job = json.loads(sys.stdin.read())
    out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.stdout = sys.stderr = io.StringIO()
    signal.signal(signal.SIGALRM, on_alarm)
    timeout_s = float(job.get("test_timeout_s", 5.0))
    namespace: dict[str, Any] = {"__name__": "solution"}
    solution_error = run(job.get("solution", ""), namespace, "<solution>", timeout_s)
    results: list[dict[str, Any]] = []
    for test in job.get("tests", []):
        error: str | None
        if solution_error is not None:
            error = f"the solution failed to run: {solution_error}"
        else:
            error = run(test["code"], dict(namespace), f"<test {test['name']}>", timeout_s)
        sys.stdout = sys.stderr = io.StringIO()  # the solution's prints are dropped
        results.append({"name": test["name"], "passed": error is None, "error": error})
    out.write("\n" + json.dumps({"results": results, "solution_error": solution_error}) + "\n")
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
