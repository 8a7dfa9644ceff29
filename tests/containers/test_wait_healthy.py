"""``wait_healthy``: the /health poll every provider uses, against a scripted HTTP server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from openenv._exceptions import ProviderError, StartupFailed
from openenv.containers import wait_healthy


class Health:
    """A loopback HTTP server whose ``/health`` answers from a script of status codes."""

    def __init__(self) -> None:
        self.script: list[int] = []
        self.default = 200
        self.hits = 0
        health = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                health.hits += 1
                code = health.script.pop(0) if health.script else health.default
                self.send_response(code if self.path == "/health" else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def health() -> Iterator[Health]:
    h = Health()
    yield h
    h.close()


class FakeClock:
    """``time`` for ``wait_healthy``: ``sleep`` advances ``monotonic`` at once and is noted
    (then ``after_sleep`` runs), so the poll schedule is checked without waiting and
    without the host's clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.after_sleep: Callable[[], None] = lambda: None

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        self.after_sleep()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    import openenv.containers._base as base

    fake = FakeClock()
    monkeypatch.setattr(base, "time", fake)
    return fake


def test_returns_once_healthy_after_some_failures(health: Health) -> None:
    health.script = [503, 503, 500]
    waited = wait_healthy(health.url, timeout_s=10, alive=lambda: True, logs=lambda: "", what="t")
    assert health.hits == 4
    assert 0 < waited < 5


def test_times_out_with_the_last_error_and_the_logs(health: Health, clock: FakeClock) -> None:
    health.default = 503
    with pytest.raises(StartupFailed) as info:
        wait_healthy(health.url, timeout_s=0.8, alive=lambda: True, logs=lambda: "line 1\nline 2", what="srv")
    assert 0.8 - 0.025 <= sum(clock.sleeps) <= 0.8 + 1e-6  # polled until the next poll would pass 0.8 s
    assert isinstance(info.value, ProviderError)
    message = str(info.value)
    assert message.startswith(f"srv was not healthy at {health.url}/health within 0.8 s")
    assert "(Service Unavailable)" in message  # the last error seen
    assert info.value.logs == "line 1\nline 2"
    assert message.endswith("--- last log lines ---\nline 1\nline 2")


def test_a_dead_server_fails_at_once() -> None:
    from openenv.containers._local import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens
    t0 = time.monotonic()
    with pytest.raises(StartupFailed, match="exited before it became healthy") as info:
        wait_healthy(url, timeout_s=30, alive=lambda: False, logs=lambda: "Traceback: boom", what="srv")
    assert time.monotonic() - t0 < 3
    assert info.value.logs == "Traceback: boom"


def test_a_server_that_never_listens_times_out() -> None:
    from openenv.containers._local import free_port

    url = f"http://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    with pytest.raises(StartupFailed, match=r"within 0\.5 s"):
        wait_healthy(url, timeout_s=0.5, alive=lambda: True, logs=lambda: "", what="srv")
    assert time.monotonic() - t0 < 3


def test_polls_every_25_ms_at_first(health: Health, clock: FakeClock) -> None:
    """A server that turns healthy 1.5 s in is seen at the next 25 ms poll."""
    health.script = [503] * 60  # every 25 ms for 1.5 s: 60 failed polls
    waited = wait_healthy(health.url, timeout_s=10, alive=lambda: True, logs=lambda: "", what="t")
    assert health.hits == 61
    assert clock.sleeps == [0.025] * 60
    assert waited == pytest.approx(1.5)


def test_after_two_seconds_the_polls_back_off_to_half_a_second(health: Health, clock: FakeClock) -> None:
    """A server that takes 4 s is asked less and less often after the first 2 s, never
    less often than every 500 ms, and is seen within a poll of turning healthy."""
    start = clock.now
    health.default = 503

    def healthy_after_4_s() -> None:
        if clock.now - start >= 4.0:
            health.default = 200

    clock.after_sleep = healthy_after_4_s
    waited = wait_healthy(health.url, timeout_s=10, alive=lambda: True, logs=lambda: "", what="t")
    fast = next(i for i, s in enumerate(clock.sleeps) if s != 0.025)
    assert 79 <= fast <= 81  # 2 s of 25 ms polls
    later = clock.sleeps[fast:]
    assert later == sorted(later)
    assert max(later) == 0.5
    assert 4.0 <= waited <= 4.5
    assert health.hits == len(clock.sleeps) + 1
