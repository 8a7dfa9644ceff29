"""A step's ``timeout_s`` handed to an env whose ``step`` takes it (RFC 0001, section 4.5).

Such an env keeps the deadline itself: it answers an observation (here: what it did and
that it ran out) a little after the deadline, as a command's wrap-up takes, and that is
a ``200``, not ``504 DEADLINE_EXCEEDED``. An env whose ``step`` does not take it is still
cut off by the server at the deadline. Over HTTP (stateless and session routes) and the
WebSocket, sync on a thread and async.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from openenv import Action, AsyncEnvironment, EnvClient, Environment, Execution, Observation, State

#: How long past its deadline the env takes to answer (an interrupted command's wrap-up).
WRAP_UP_S = 0.3


class Act(Action):
    work_s: float = 5.0


class Obs(Observation):
    given: float | None = None
    timed_out: bool = False


class Keeps(Environment[Act, Obs, State]):
    """Works ``work_s`` or until the step's deadline, then wraps up and answers."""

    execution = Execution.THREAD

    def __init__(self) -> None:
        self._state = State()

    def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
        return Obs()

    def step(self, action: Act, timeout_s: float | None = None) -> Obs:
        cut = timeout_s is not None and timeout_s < action.work_s
        time.sleep((timeout_s + WRAP_UP_S) if cut and timeout_s is not None else action.work_s)
        return Obs(given=timeout_s, timed_out=cut)

    def state(self) -> State:
        return self._state


class KeepsAsync(AsyncEnvironment[Act, Obs, State]):
    def __init__(self) -> None:
        self._state = State()

    async def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
        return Obs()

    async def step(self, action: Act, timeout_s: float | None = None) -> Obs:
        cut = timeout_s is not None and timeout_s < action.work_s
        await asyncio.sleep((timeout_s + WRAP_UP_S) if cut and timeout_s is not None else action.work_s)
        return Obs(given=timeout_s, timed_out=cut)

    async def state(self) -> State:
        return self._state


class Ignores(Keeps):
    """The same work, but ``step`` takes no deadline: the server keeps it."""

    def step(self, action: Act) -> Obs:  # type: ignore[override]
        time.sleep(action.work_s)
        return Obs()


@pytest.mark.parametrize("env", [Keeps, KeepsAsync], ids=["thread", "async"])
def test_an_env_that_takes_the_deadline_answers_past_it_with_an_observation(serve, env):
    server = serve(env)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        sid = http.post("/sessions").json()["session_id"]
        assert http.post(f"/sessions/{sid}/reset", json={}).status_code == 200
        t0 = time.monotonic()
        got = http.post(f"/sessions/{sid}/step", json={"action": {"work_s": 5}, "timeout_s": 0.05})
        assert got.status_code == 200, got.text
        assert got.json()["observation"]["given"] == 0.05
        assert got.json()["observation"]["timed_out"] is True
        assert time.monotonic() - t0 < 4  # the env kept the deadline: it did not work 5 s
        # no deadline asked: none handed, the work done
        got = http.post(f"/sessions/{sid}/step", json={"action": {"work_s": 0.01}})
        assert got.json()["observation"] == {"given": None, "timed_out": False, "metadata": {}}
        stateless = http.post("/step", json={"action": {"work_s": 5}, "timeout_s": 0.02})
        assert stateless.status_code == 200, stateless.text
        assert stateless.json()["observation"]["given"] == 0.02


def test_the_deadline_reaches_the_env_over_the_websocket(serve):
    server = serve(KeepsAsync)
    with EnvClient(server.url) as client:
        client.reset()
        observation = client.step({"work_s": 5}, timeout_s=0.05).observation
        assert observation["given"] == 0.05
        assert observation["timed_out"] is True


def test_an_env_that_does_not_take_it_is_cut_off_at_the_deadline(serve):
    server = serve(Ignores)
    got = httpx.post(f"{server.url}/step", json={"action": {"work_s": 0.5}, "timeout_s": 0.05}, timeout=30)
    assert got.status_code == 504, got.text
    assert got.json()["error"]["code"] == "DEADLINE_EXCEEDED"
