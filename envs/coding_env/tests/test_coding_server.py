"""The coding env behind a real ``openenv serve coding``: 4 concurrent sessions stay
isolated, the warm pool serves resets, and a hostile session leaves the rest alone."""

from __future__ import annotations

import contextlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from _coding_fixtures import PROBLEMS, served
from coding_env import MODELS, CodeAction

from openenv import EnvClient

SOLUTIONS = {row["id"]: row["solution"] for row in map(json.loads, PROBLEMS.read_text().splitlines())}
TASKS = ["two_sum", "fizzbuzz", "is_palindrome", "roman_to_int"]


#: the cells' timeout on this module's server: far enough above a step deadline's interrupt
#: (0.15 s for a 0.3 s deadline) that a loaded host's lag cannot blur the two
CELL_TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def url():
    with served("auto", pool_size=4, cell_timeout_s=CELL_TIMEOUT_S) as url:
        yield url


def session(url: str, i: int) -> dict[str, object]:
    with EnvClient(url, MODELS) as env:
        first = env.reset(task_id=TASKS[i])
        assert first.observation.task_id == TASKS[i]
        env.step(CodeAction(code=f"mine = {i}\nopen('owner.txt', 'w').write('{i}')"))
        look = "import os\n(mine, open('owner.txt').read(), sorted(os.listdir('.')))"
        seen = env.step(CodeAction(code=look))
        done = env.step(CodeAction(code=SOLUTIONS[TASKS[i]], submit=True))
        return {"seen": seen.observation.result, "reward": done.reward, "done": done.terminated}


def test_four_concurrent_sessions_are_isolated(url):
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda i: session(url, i), range(4)))
    for i, outcome in enumerate(outcomes):
        assert outcome["seen"] == f"({i}, '{i}', ['owner.txt'])"
        assert outcome["reward"] == 1.0
        assert outcome["done"] is True


def test_a_hard_hang_over_the_wire(url):
    with EnvClient(url, MODELS) as env:
        env.reset(task_id="two_sum")
        env.step(CodeAction(code="x = 1"))
        hang = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile 1: pass"
        hung = env.step(CodeAction(code=hang))
        assert hung.observation.state_lost is True
        assert hung.observation.timed_out is True
        after = env.step(CodeAction(code="'fresh'"))
        assert after.observation.result == "'fresh'"
        assert env.state().restarts == 1


def test_reset_options_are_validated(url):
    response = httpx.post(f"{url}/reset", json={"task_id": "no_such_problem"}, timeout=30)
    assert response.status_code == 404
    bad = httpx.post(f"{url}/reset", json={"max_steps": 0}, timeout=30)
    assert bad.status_code == 422
    schema = httpx.get(f"{url}/schema", timeout=30).json()
    assert set(schema["reset_options"]["properties"]) >= {"task_id", "index", "split", "max_steps"}


def test_metadata_reports_the_sandbox_in_force(url):
    meta = httpx.get(f"{url}/metadata", timeout=30).json()
    assert meta["name"] == "coding_env"
    assert meta["sandbox"]["level"] in {"bwrap", "rlimits"}
    assert meta["sandbox"]["limits"]["memory_bytes"] == 512 << 20  # the server's env_kwargs


def test_strict_without_bubblewrap_refuses_to_start(monkeypatch):
    from coding_env._runtime import CodingRuntime, CodingSettings

    from openenv.sandbox import SandboxUnavailable

    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap on PATH: strict cannot be had
    import openenv.sandbox._bwrap as bwrap

    bwrap.bwrap_works.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="strict"):
            CodingRuntime(CodingSettings(sandbox="strict"))
    finally:
        monkeypatch.undo()
        bwrap.bwrap_works.cache_clear()


def _workers_with(marker: bytes) -> list[int]:
    """Live processes whose environment holds ``marker`` (this test's workers)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry.name}/environ", "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.append(int(entry.name))
    return found


def test_no_worker_outlives_the_server():
    limit = 1_000_000 + os.getpid()  # an output_limit no other test, nor another run at once, uses
    marker = f"CODING_ENV_OUTPUT_LIMIT={limit}".encode()
    with served("auto", pool_size=2, output_limit=limit) as url:
        clients = [EnvClient(url, MODELS) for _ in range(2)]
        for client in clients:
            client.reset(task_id="two_sum")
            client.step(CodeAction(code="import subprocess\nsubprocess.Popen(['sleep', '300'])"))
        assert len(_workers_with(marker)) >= 4  # 2 sessions' workers (+ their sleeps) + the pool
    # the server stopped with both sessions open
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()
    deadline = time.monotonic() + 10
    while _workers_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _workers_with(marker) == []


def test_a_request_deadline_interrupts_the_cell_and_keeps_the_session(url):
    """The step's ``timeout_s`` is the env's to keep (RFC 0001 section 4.5): the cell is
    interrupted at it (not at the cell's 3 s timeout) and the step is an observation."""
    with EnvClient(url, MODELS) as env:
        env.reset(task_id="two_sum")
        env.step(CodeAction(code="kept = 'yes'"))
        obs = env.step(CodeAction(code="import time\ntime.sleep(20)"), timeout_s=0.3).observation
        assert obs.timed_out is True
        assert obs.state_lost is False
        assert obs.duration_s < CELL_TIMEOUT_S / 2  # by the step's deadline (0.15 s unloaded)
        assert env.step(CodeAction(code="kept")).observation.result == "'yes'"


def test_a_deadline_shorter_than_the_cells_start_keeps_the_state(url):
    """A 1 ms deadline on the first cell of a fresh worker: the interrupt comes before the
    cell begins; it is sent again until the cell takes it (once dropped, the worker was
    killed at the end of the 2 s grace and its state lost)."""
    with httpx.Client(base_url=url, timeout=30) as http:
        for _ in range(10):  # a race: lost in about half the runs of 6 before
            sid = http.post("/sessions").json()["session_id"]
            assert http.post(f"/sessions/{sid}/reset", json={"task_id": "two_sum"}).status_code == 200
            step = {"action": {"code": "import time; time.sleep(20)"}, "timeout_s": 0.001}
            obs = http.post(f"/sessions/{sid}/step", json=step).json()["observation"]
            assert obs["timed_out"] is True
            assert obs["state_lost"] is False, obs["stderr"]
            http.delete(f"/sessions/{sid}")


def test_unencodable_text_reaches_the_client(url):
    with EnvClient(url, MODELS) as env:
        env.reset(task_id="two_sum")
        obs = env.step(CodeAction(code="print('\\udcff'.encode('utf-8', 'surrogatepass'))\n"
                                       "raise ValueError('lone \\ud800 surrogate')")).observation
        assert obs.exception is not None
        assert obs.exception.message == "lone ? surrogate"
        assert obs.stdout == "b'\\xed\\xb3\\xbf'\n"
