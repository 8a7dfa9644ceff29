"""Rubrics plugged into an unchanged env: served, scored, broken down on both clients."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from echo_env import MODELS, EchoAction, EchoEnv

from openenv import AsyncEnvClient, EnvClient, Execution, ExecutionError
from openenv.rewards import (
    EnvReward,
    Gate,
    HttpRubric,
    RewardServer,
    Rubric,
    TrajectoryRubric,
    WeightedSum,
    with_rubric,
)

from .._envs import make_env
from .._served import wait_served

REPO = Path(__file__).resolve().parents[2]


def has_please(action: Any, observation: Any) -> float:
    return 1.0 if "please" in action.message else 0.0


def rubric() -> WeightedSum:
    return WeightedSum({"polite": Gate(has_please), "env": EnvReward()}, weights=[2.0, 0.5])


def test_wrapper_is_the_env_class_with_a_rubric():
    scored = with_rubric(EchoEnv, rubric())
    assert issubclass(scored, EchoEnv)
    assert scored.metadata().name == "echo_env"
    assert scored.execution is Execution.INLINE  # nothing in this rubric blocks
    assert with_rubric(EchoEnv, HttpRubric("http://127.0.0.1:1")).execution is Execution.THREAD
    env = scored()
    env.reset()
    obs = env.step(EchoAction(message="please"))
    assert obs.reward == pytest.approx(2.0 * 1.0 + 0.5 * 0.6)
    assert obs.metadata["reward_breakdown"] == {
        "polite": 1.0,
        "polite.has_please": 1.0,
        "env": pytest.approx(0.6),
    }
    with pytest.raises(TypeError):
        with_rubric(object, rubric())  # type: ignore[arg-type]


def test_breakdown_reaches_the_sync_client(serve):
    server = serve(with_rubric(EchoEnv, rubric()))
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        result = env.step(EchoAction(message="please go"))
        assert result.reward == pytest.approx(2.0 + 0.5 * 0.9)
        assert result.metadata["reward_breakdown"]["polite"] == 1.0
        assert result.observation.metadata["reward_breakdown"]["env"] == pytest.approx(0.9)
        assert env.step(EchoAction(message="go")).reward == pytest.approx(0.5 * 0.2)
    r = httpx.post(f"{server.url}/step", json={"action": {"message": "please"}}, timeout=10)
    assert r.json()["metadata"]["reward_breakdown"]["polite"] == 1.0  # upstream-shaped HTTP too


async def test_breakdown_reaches_the_async_client_and_sessions_have_their_own_rubric(serve):
    def episode_length(trajectory: list[Any]) -> float:
        return float(len(trajectory))

    server = serve(with_rubric(EchoEnv, TrajectoryRubric(episode_length)))
    async with AsyncEnvClient(server.url, MODELS) as env:
        await env.reset_batch(["a", "b"], max_steps=3)
        for _ in range(2):
            results = await env.step_batch({"a": EchoAction(message="x"), "b": EchoAction(message="y")})
            assert [r.reward for r in results] == [0.0, 0.0]
        await env.step(EchoAction(message="x"), session="a")
        done = await env.step(EchoAction(message="y"), session="b")
        assert done.truncated
        assert done.reward == 3.0  # paid at the end, counting only session b's steps
        assert done.metadata["reward_breakdown"] == {"episode_length": 3.0}
        await env.reset(session="b", max_steps=1)  # a new episode: the trajectory restarts
        assert (await env.step(EchoAction(message="z"), session="b")).reward == 1.0


async def test_async_rubric_on_an_async_env(serve):
    class Judge(Rubric):
        async def forward(self, action: Any, observation: Any) -> float:
            await asyncio.sleep(0)
            return 0.25

    env_class = make_env(kind="async")
    server = serve(with_rubric(env_class, WeightedSum({"judge": Judge()})))
    async with AsyncEnvClient(server.url) as env:
        await env.reset()
        result = await env.step({"message": "hi"})
        assert result.reward == 0.25
        assert result.metadata["reward_breakdown"] == {"judge": 0.25}


@pytest.fixture
def reward_process():
    """``python -m openenv.rewards`` serving ``_reward_fns.polite`` in its own process."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv.rewards", "tests.rewards._reward_fns:polite", "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"reward server did not start: {proc.communicate()[0]!r}")
        time.sleep(0.05)
    yield url, proc
    proc.terminate()
    proc.wait(10)


def test_external_reward_from_a_separate_process(serve, reward_process):
    url, proc = reward_process
    server = serve(with_rubric(EchoEnv, HttpRubric(url)))
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        result = env.step(EchoAction(message="please"))
        assert result.reward == 1.0
        assert result.metadata["reward_breakdown"] == {"please": 1.0, "short": 1.0}
        result = env.step(EchoAction(message="a very long message indeed"))
        assert result.reward == 0.0
    # composed with local parts, components are nested under the rubric's name
    server = serve(with_rubric(EchoEnv, WeightedSum([HttpRubric(url), EnvReward()])))
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        result = env.step(EchoAction(message="please"))
        assert result.reward == pytest.approx(1.0 + 0.6)
        assert result.metadata["reward_breakdown"] == {
            "external": 1.0,
            "external.please": 1.0,
            "external.short": 1.0,
            "env": pytest.approx(0.6),
        }
    proc.terminate()
    proc.wait(10)
    with EnvClient(server.url, MODELS) as env:
        env.reset()
        with pytest.raises(ExecutionError, match="reward endpoint"):
            env.step(EchoAction(message="please"))


def test_reward_server_in_process_with_a_plain_function():
    from ._reward_fns import length

    with RewardServer(length) as srv:
        r = httpx.post(f"{srv.url}/score", json={"action": {"message": "abc"}, "observation": {}}, timeout=5)
        assert r.json() == {"score": 3.0}
        assert httpx.post(f"{srv.url}/other", json={}, timeout=5).status_code == 404
        bad = httpx.post(f"{srv.url}/score", json={"action": {}}, timeout=5)
        assert bad.status_code == 500
        assert "KeyError" in bad.json()["detail"]
        with pytest.raises(ExecutionError, match="HTTP Error 500"):
            HttpRubric(srv.url)({}, {})
    with (
        RewardServer(lambda action, observation: {"points": 1}) as srv,
        pytest.raises(ExecutionError, match="no numeric 'score'"),
    ):
        HttpRubric(srv.url + "/score")({"message": "a"}, {})


def test_openenv_serve_takes_a_wrapped_env(tmp_path):
    """``openenv serve module:Scored`` where ``Scored = with_rubric(EchoEnv, ...)``."""
    (tmp_path / "scored_echo.py").write_text(
        "from echo_env import EchoEnv\n"
        "from openenv.rewards import EnvReward, WeightedSum, with_rubric\n"
        "def short(action, observation):\n"
        "    return 1.0 if len(action.message) < 5 else 0.0\n"
        "Scored = with_rubric(EchoEnv, WeightedSum({'short': short, 'env': EnvReward()}))\n"
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "openenv", "serve", "scored_echo:Scored", "--port", str(port)]
    proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_served(f"http://127.0.0.1:{port}", proc)
        with EnvClient(f"http://127.0.0.1:{port}", MODELS) as env:
            env.reset()
            result = env.step(EchoAction(message="hi"))
        assert result.reward == pytest.approx(1.0 + 0.2)
        assert result.metadata["reward_breakdown"] == {"short": 1.0, "env": pytest.approx(0.2)}
    finally:
        proc.terminate()
        proc.wait(10)
