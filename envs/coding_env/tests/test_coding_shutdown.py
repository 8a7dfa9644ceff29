"""SIGTERM stops ``openenv serve coding`` promptly with sessions open: idle ones, ones
whose cell is still running and one whose grading is still running. Nothing it started
outlives it.

A running cell or grading is killed, not waited for: the runtime's close kills every
worker and grading sandbox it started, so the threads running those calls return at
once and the interpreter has nothing left to join (it used to wait for each running
cell's ``cell_timeout_s``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil
import pytest
from _coding_fixtures import FAST, LEVELS, free_port
from coding_env import MODELS, CodeAction

from openenv import EnvClient

#: Limits far past the test's bound: the server must not wait for a cell or a grading.
SLOW_CALLS = {"cell_timeout_s": 300.0, "grace_s": 5.0, "test_timeout_s": 300.0, "grade_timeout_s": 300.0}
#: The bound on the exit (the target is under a second): generous for a loaded 2-core
#: machine, and far below the 300 s a server waiting for the running calls would take.
EXIT_BOUND_S = 10.0
CELL_SLEEP = "981"  # a `sleep 981` is this test's running cell, `sleep 982` its grading
GRADING_SLEEP = "982"
#: the slow worker start's `sleep`: 60 s, a duration no other test run uses (its pid)
SLOW_START = f"60.{os.getpid()}"


@contextlib.contextmanager
def coding_server(level: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    kwargs = orjson.dumps({**FAST, "sandbox": level, **SLOW_CALLS}).decode()
    cmd = [sys.executable, "-m", "openenv", "serve", "coding", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, "OPENENV_ENV_KWARGS": kwargs},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            assert proc.poll() is None, "the server exited at startup"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        else:
            pytest.fail("the coding server did not become healthy in 60 s")
        yield proc, url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _descendants(pid: int) -> list[psutil.Process]:
    found: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        found = psutil.Process(pid).children(recursive=True)
    return found


def _sleeps(procs: list[psutil.Process], seconds: str) -> int:
    found = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            found += p.cmdline() == ["sleep", seconds]
    return found


def _alive(procs: list[psutil.Process]) -> list[str]:
    left = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{p.pid} {p.cmdline()}")
    return left


Client = EnvClient[Any, Any, Any]


def _call_in_thread(url: str, action: CodeAction, clients: list[Client]) -> threading.Thread:
    client: Client = EnvClient(url, MODELS)
    clients.append(client)
    client.reset(task_id="two_sum")

    def call() -> None:
        with contextlib.suppress(Exception):  # the server goes away under the call
            client.step(action)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_sigterm_with_running_cells_and_gradings_exits_promptly(
    level: str, record_property: Any
) -> None:
    clients: list[Client] = []
    threads: list[threading.Thread] = []
    with coding_server(level) as (proc, url):
        for i in range(2):  # idle sessions, with state
            idle: Client = EnvClient(url, MODELS)
            clients.append(idle)
            idle.reset(task_id="two_sum")
            assert idle.step(CodeAction(code=f"x = {i}\nx")).observation.result == str(i)
        cell = f"import subprocess, time\nsubprocess.Popen(['sleep', '{CELL_SLEEP}'])\ntime.sleep(600)"
        for _ in range(2):
            threads.append(_call_in_thread(url, CodeAction(code=cell), clients))
        endless = (
            f"import subprocess\nsubprocess.Popen(['sleep', '{GRADING_SLEEP}'])\n"
            "def two_sum(nums, target):\n    while True:\n        pass\n"
        )
        threads.append(_call_in_thread(url, CodeAction(code=endless, submit=True), clients))
        for _ in range(600):  # until both cells and the grading are running
            below = _descendants(proc.pid)
            if _sleeps(below, CELL_SLEEP) == 2 and _sleeps(below, GRADING_SLEEP) >= 1:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the cells and the grading did not start in 60 s")
        time.sleep(0.5)  # the grading's tests are under way
        below = _descendants(proc.pid)
        assert len(below) >= 8, below  # pooled workers, 4 sessions' workers, their sleeps

        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server did not exit within {EXIT_BOUND_S:g} s of SIGTERM")
        took = time.monotonic() - start
        record_property("sigterm_exit_s", round(took, 3))
        print(f"\n[{level}] SIGTERM -> exit in {took:.2f} s; 4 sessions open (2 cells, 1 grading running)")
        assert code == 0
        for _ in range(200):  # killed processes are reaped by whoever inherited them (20 s)
            if not _alive(below):
                break
            time.sleep(0.1)
        assert _alive(below) == []
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()


def test_close_kills_a_worker_still_starting() -> None:
    """A worker whose start is slow (a loaded host: seconds) when the runtime closes is
    killed at once, not waited for: its thread gets ``WorkerLost`` and its sandbox is
    given back. (Before, ``close`` knew only started workers: a SIGTERM under load waited
    for every start in flight, 6-11 s against the 6 s bound of the chaos test.)"""
    from coding_env._worker import default_python

    where = Path(tempfile.mkdtemp(prefix="openenv-slow-start-"))  # the sandbox's uid runs it
    where.chmod(0o755)
    slow = where / "python"
    slow.write_text(f"#!/bin/sh\nsleep {SLOW_START}\nexec {default_python()[0]} \"$@\"\n")
    slow.chmod(0o755)
    try:
        _close_while_starting(slow)
    finally:
        shutil.rmtree(where)


def _close_while_starting(slow: Path) -> None:
    from coding_env._runtime import CodingRuntime, CodingSettings
    from coding_env._worker import WorkerLost

    settings = CodingSettings.from_kwargs(**{**FAST, "sandbox": "none", "pool_size": 0, "python": str(slow)})
    rt = CodingRuntime(settings).start()
    out: dict[str, Any] = {}

    def start() -> None:
        try:
            out["worker"] = rt.new_worker()
        except BaseException as exc:  # reported below
            out["error"] = exc

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    for _ in range(300):  # until its process runs (the sleep before the worker starts), below this test's
        if _sleeps(_descendants(os.getpid()), SLOW_START):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the slow worker did not start in 30 s")
    live = list(rt._live)
    assert len(live) == 1
    sandbox = live[0].sandbox
    start_s = time.monotonic()
    rt.close()
    thread.join(timeout=20)
    took = time.monotonic() - start_s
    assert not thread.is_alive(), "the start was waited for"
    assert isinstance(out.get("error"), WorkerLost), out
    assert took < 10.0, took  # the start would take 60 s
    assert sandbox.closed
    assert not sandbox.root.exists()


def test_a_worker_still_starting_when_the_pool_closes_is_not_logged_as_a_failure(caplog) -> None:
    """The env closing under a starting worker makes its start fail: that is the close,
    not a failure to report (every short ``openenv eval run`` printed a traceback)."""
    import logging
    import threading

    from coding_env._pool import WorkerPool

    entered, release = threading.Event(), threading.Event()

    def factory():
        entered.set()
        release.wait(10)
        raise RuntimeError("the runtime closed under this worker")

    pool = WorkerPool(factory, 1).start()
    assert entered.wait(10)
    with caplog.at_level(logging.ERROR, logger="coding_env._pool"):
        pool.stop()
        release.set()
        pool.close()
    assert not [r for r in caplog.records if "starting a pooled worker failed" in r.getMessage()]
