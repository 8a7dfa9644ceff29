"""Transient errors (the policy's, the env's) are retried with backoff and counted;
other errors are recorded as errors (never zeros); an episode past its deadline is a
timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv.eval import EvalConfig, load_trajectories, run_eval

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)
ECHO = str(ROOT / "envs" / "echo_env")


def test_transient_errors_are_retried_and_counted(tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(
            env=ECHO,
            policy="python:tests.eval._policies:flaky",
            out=tmp_path,
            count=3,
            samples=2,
            max_turns=1,
            backoff_s=0.01,
        )
    )
    assert results["errors"] == 0
    assert results["retries"] == 12  # two per episode
    for t in load_trajectories(tmp_path):
        assert (t.retries, t.attempts, t.status, t.reward) == (2, 3, "truncated", pytest.approx(1.0))


def test_each_retry_waits_a_doubling_backoff(tmp_path: Path) -> None:
    from . import _policies

    _policies.attempts_at.clear()
    results = run_eval(
        EvalConfig(
            env=ECHO,
            policy="python:tests.eval._policies:flaky_timed",
            out=tmp_path,
            count=1,
            max_turns=1,
            backoff_s=0.1,
        )
    )
    assert (results["errors"], results["retries"]) == (0, 2)
    [times] = _policies.attempts_at.values()
    assert len(times) == 3
    first, second = times[1] - times[0], times[2] - times[1]
    assert first >= 0.1  # backoff_s
    assert second >= 0.2  # then twice that


def test_a_transient_error_that_persists_becomes_an_error(tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(
            env=ECHO,
            policy="python:tests.eval._policies:flaky",
            out=tmp_path,
            count=1,
            max_turns=1,
            retries=1,
            backoff_s=0.01,
            seed=7,
        )
    )
    [t] = load_trajectories(tmp_path)
    assert t.status == "error"
    assert t.retries == 1
    assert "ConnectionError: model server went away (2)" in (t.error or "")
    assert results["errors"] == 1
    assert results["scored_tasks"] == 0  # not a zero


def test_a_bug_is_an_error_at_once(tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(env=ECHO, policy="python:tests.eval._policies:broken", out=tmp_path, count=2)
    )
    assert results["errors"] == 2
    assert results["retries"] == 0
    assert results["error_kinds"] == {"KeyError": 2}


def test_an_episode_past_its_deadline_is_a_timeout(tmp_path: Path) -> None:
    results = run_eval(
        EvalConfig(
            env=ECHO,
            policy="python:tests.eval._policies:sleepy",
            out=tmp_path,
            count=2,
            episode_timeout_s=0.3,
            concurrency=2,
        )
    )
    assert results["timeouts"] == 2
    assert results["errors"] == 0
    assert results["pass_at_k"] == {"1": 0.0}
    assert all(
        t.status == "timeout" and t.reward == 0.0 and not t.passed for t in load_trajectories(tmp_path)
    )


def test_an_env_at_capacity_is_retried_after_a_backoff(tmp_path: Path) -> None:
    """The env side: a server of one session and two episodes at once. The second
    episode's session is refused (CAPACITY_REACHED, transient); it is played again after
    a backoff, once the first has ended, and counted as a retry, not an error."""
    from echo_env import EchoEnv

    from openenv.server import ServerSettings, create_app, serve_in_background

    app = create_app(EchoEnv, settings=ServerSettings.from_env(max_sessions=1))
    with serve_in_background(app) as server:
        results = run_eval(
            EvalConfig(
                env=server.url,
                policy="python:tests.eval._policies:ten_chars",
                out=tmp_path,
                count=2,
                max_turns=2,
                concurrency=2,
                backoff_s=0.2,
                retries=5,  # a backoff of 0.2 s doubling: 6.2 s in all, for an episode of milliseconds
            )
        )
    assert (results["episodes"], results["errors"]) == (2, 0)
    assert results["retries"] >= 1
    assert results["mean_reward"] == pytest.approx(2.0)
    retried = [t for t in load_trajectories(tmp_path) if t.retries]
    assert retried
    assert all(t.status == "truncated" and t.attempts == t.retries + 1 for t in retried)
