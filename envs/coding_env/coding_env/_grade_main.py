"""The grader: runs in a fresh sandbox, stdlib only, never in the agent's worker.

Started as ``python -I -c <this source>``; reads one JSON object from stdin:
``{"jobs": [{"solution", "tests": [{"name", "code"}], "test_timeout_s", "timeout_s"}]}``.
Each job runs in its own forked child (jobs cannot touch each other): the solution,
then each test in a copy of the solution's namespace under its own alarm; a child past
its ``timeout_s`` is killed. The last line of stdout is ``{"reports": [...]}``, one
``{"results": [{"name", "passed", "error"}], "solution_error", "error", "duration_s"}``
per job. What solutions print goes nowhere.
"""

import contextlib
import io
import json
import os
import select
import signal
import sys
import time
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


def grade(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in this process (a forked child)."""
    signal.signal(signal.SIGALRM, on_alarm)
    sys.stdout = sys.stderr = io.StringIO()
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
    return {"results": results, "solution_error": solution_error}


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def in_child(job: dict[str, Any], report_fd: int) -> dict[str, Any]:
    """Fork, grade ``job`` in the child, read its one-line report back."""
    start = time.monotonic()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no way to write the batch's report
        os.close(rfd)
        os.close(report_fd)
        try:
            write_all(wfd, (json.dumps(grade(job)) + "\n").encode())
        finally:
            os._exit(0)
    os.close(wfd)
    deadline = start + float(job.get("timeout_s", 60.0))
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([rfd], [], [], left)[0]:
            break
        chunk = os.read(rfd, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(rfd)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)  # done or not, it has nothing more to say
    os.waitpid(pid, 0)
    elapsed = time.monotonic() - start
    try:
        report: dict[str, Any] = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        why = "ran past its time limit" if elapsed >= deadline - start else "died without a report"
        return {"results": [], "solution_error": None, "error": f"the grading {why}", "duration_s": elapsed}
    report["duration_s"] = elapsed
    return report


def main() -> None:
    request = json.loads(sys.stdin.read())
    report_fd = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    reports = [in_child(job, report_fd) for job in request.get("jobs", [])]
    write_all(report_fd, ("\n" + json.dumps({"reports": reports}) + "\n").encode())
    os._exit(0)


if __name__ == "__main__":
    main()
