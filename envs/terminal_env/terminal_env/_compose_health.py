"""Healthchecks: a compose service's ``healthcheck:`` (read from the compose file, given to
Docker, waited for), and the task's own ``[environment.healthcheck]`` (``wait_task_ready``).

A side service with a healthcheck is waited for until Docker calls it ``healthy``
before the next service (and, last, the agent's container) starts: what ``docker
compose up --wait`` (Harbor's Docker environment) and ``depends_on: {condition:
service_healthy}`` give. The keys are compose's::

    healthcheck:
      test: ["CMD", "pg_isready"]       # or ["CMD-SHELL", "..."], or a string (a shell line)
      interval: 2s                      # durations: 1m30s, 500ms, 2h (Docker's defaults:
      timeout: 5s                       #   30s, 30s, 0s; 3 retries)
      retries: 5
      start_period: 10s
      disable: true                     # or test: ["NONE"]: no check, nothing waited for

``start_interval`` is read and not used (Docker's API before 1.44 has none): during
the start period the check runs every ``interval``. The wait ends with an error that
names the service when it is ``unhealthy`` (``retries`` failed checks in a row after
the start period: the last check's exit code and output), when it exits, or when it is
still not healthy once the whole budget (the start period, then ``retries + 1`` checks
of ``interval + timeout`` each, plus 10 s) is spent.

The task's own check (Harbor's ``[environment.healthcheck]``) runs in the agent's
container once it has started, before the session is handed out, as Harbor runs it
before the agent's turn: the command until it exits 0; a failure during
``start_period_sec`` is followed by another check after ``start_interval_sec``, a later
one counts, and ``retries`` in a row fail the start with one line (the last exit code
and output). A check past its ``timeout_sec`` counts as failed (what it started stays in
that container, as under Harbor).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._harbor import TaskFormatError, TaskHealthcheck

_KEYS = {"test", "interval", "timeout", "retries", "start_period", "start_interval", "disable"}
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_POLL_S = 0.1
_SLACK_S = 10.0


def duration_s(value: Any, where: str) -> float:
    """A compose duration (``1m30s``, ``500ms``, ``10s``) in seconds."""
    text = value.strip() if isinstance(value, str) else ""
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise TaskFormatError(f"{where}: {value!r} is not a duration like '10s', '500ms' or '1m30s'")
    return sum(float(n) * _UNITS[u] for n, u in parts)


@dataclass(frozen=True, slots=True)
class Healthcheck:
    """One service's check, in seconds (Docker's defaults where the file says nothing)."""

    test: tuple[str, ...]
    interval_s: float = 30.0
    timeout_s: float = 30.0
    retries: int = 3
    start_period_s: float = 0.0

    def docker(self) -> dict[str, Any]:
        """The ``healthcheck`` argument of docker-py's ``containers.run`` (nanoseconds)."""
        return {
            "test": list(self.test),
            "interval": int(self.interval_s * 1e9),
            "timeout": int(self.timeout_s * 1e9),
            "retries": self.retries,
            "start_period": int(self.start_period_s * 1e9),
        }

    @property
    def budget_s(self) -> float:
        """How long the wait lasts at most."""
        return self.start_period_s + (self.retries + 1) * (self.interval_s + self.timeout_s) + _SLACK_S


def read_healthcheck(conf: Any, where: str) -> Healthcheck | None:
    """A service's ``healthcheck`` table read (None: no check); ``TaskFormatError`` else."""
    where = f"{where}.healthcheck"
    if not isinstance(conf, dict):
        raise TaskFormatError(f"{where}: expected a table (test, interval, timeout, retries, start_period)")
    unknown = set(conf) - _KEYS
    if unknown:
        raise TaskFormatError(f"{where}: {', '.join(sorted(unknown))} not supported here")
    if conf.get("disable") is True:
        return None
    test = conf.get("test")
    if isinstance(test, str):
        test = ["CMD-SHELL", test]
    if not (isinstance(test, list) and test and all(isinstance(t, str) for t in test)):
        raise TaskFormatError(f"{where}.test: expected a shell line or a list like ['CMD', 'prog', 'arg']")
    if test[0] == "NONE":
        return None
    if test[0] not in ("CMD", "CMD-SHELL") or len(test) < 2:
        raise TaskFormatError(f"{where}.test: a list starts with 'CMD' or 'CMD-SHELL' and names a command")
    retries = conf.get("retries", 3)
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
        raise TaskFormatError(f"{where}.retries: {retries!r} is not a whole number of at least 1")
    named = ("interval", "timeout", "start_period")
    times = {key: duration_s(conf[key], f"{where}.{key}") for key in named if key in conf}
    if "start_interval" in conf:
        duration_s(conf["start_interval"], f"{where}.start_interval")
    for key in ("interval", "timeout"):
        if key in times and times[key] < 0.001:
            raise TaskFormatError(f"{where}.{key}: at least 1ms")
    return Healthcheck(
        test=tuple(test),
        interval_s=times.get("interval", 30.0),
        timeout_s=times.get("timeout", 30.0),
        retries=retries,
        start_period_s=times.get("start_period", 0.0),
    )


def _last_probe(health: dict[str, Any]) -> str:
    log = health.get("Log") or []
    if not log:
        return "no check has finished"
    last = log[-1]
    output = " ".join(str(last.get("Output") or "").split())
    return f"the last check exited {last.get('ExitCode')}" + (f": {output[-150:]}" if output else "")


def wait_healthy(container: Any, name: str, check: Healthcheck) -> None:
    """Block until Docker calls ``container`` healthy; ``RuntimeError`` (one line,
    naming ``name``) when it turns unhealthy, exits, or the budget runs out."""
    deadline = time.monotonic() + check.budget_s
    while True:
        container.reload()
        state = container.attrs.get("State") or {}
        health = state.get("Health") or {}
        status = health.get("Status")
        if status == "healthy":
            return
        if status == "unhealthy":
            raise RuntimeError(
                f"service {name!r} is unhealthy after {check.retries} failed checks ({_last_probe(health)})"
            )
        if state.get("Status") not in ("created", "running"):
            tail = " ".join(container.logs(tail=5).decode(errors="replace").split())[-150:]
            raise RuntimeError(
                f"service {name!r} exited (code {state.get('ExitCode')}) before it was healthy"
                + (f": {tail}" if tail else "")
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"service {name!r} was not healthy within {check.budget_s:g} s ({_last_probe(health)})"
            )
        time.sleep(_POLL_S)


def wait_task_ready(check_once: Callable[[str, float], tuple[int, str]], check: TaskHealthcheck) -> None:
    """Run ``check.command`` through ``check_once(command, timeout_s)`` (its exit code and
    output) until it exits 0 (see the module); ``RuntimeError`` (one line) when
    ``retries`` checks after the start period fail in a row."""
    start_period_ends = time.monotonic() + check.start_period_s
    failures = 0
    while True:
        starting = time.monotonic() < start_period_ends
        code, output = check_once(check.command, check.timeout_s)
        if code == 0:
            return
        if not starting:
            failures += 1
            if failures >= check.retries:
                said = " ".join(output.split())[-150:]
                raise RuntimeError(
                    f"its healthcheck failed {failures} times in a row (the last exited {code}"
                    + (f": {said})" if said else ")")
                )
        time.sleep(check.start_interval_s if starting else check.interval_s)
