"""Per-process resources, constructor arguments, typed reset options, batch specs."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, Field

from openenv import (
    Action,
    AsyncEnvClient,
    BatchError,
    DeadlineExceeded,
    EnvClient,
    Environment,
    EnvModels,
    Execution,
    Observation,
    State,
    ValidationFailed,
)

from .._served import wait_served


class Act(Action):
    sleep_s: float = 0.0
    hold: bool = False


class Obs(Observation):
    pool_id: int = 0
    greeting: str = ""
    level: int = 0
    seed: int | None = None


class Pool:
    built: list[Pool] = []

    def __init__(self) -> None:
        self.closed = False
        Pool.built.append(self)


class PooledEnv(Environment[Act, Obs, State]):
    """Shares one Pool per process; gets constructor arguments from the server."""

    execution = Execution.THREAD
    entered_on: list[str] = []

    @classmethod
    @contextlib.contextmanager
    def process_resources(cls, **env_kwargs: Any) -> Iterator[Pool]:
        cls.entered_on.append(threading.current_thread().name)
        pool = Pool()
        try:
            yield pool
        finally:
            pool.closed = True

    def __init__(self, resources: Pool, greeting: str = "hi") -> None:
        self.pool = resources
        self.greeting = greeting
        self._state = State()

    def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
        return Obs(pool_id=id(self.pool), greeting=self.greeting, seed=seed)

    def step(self, action: Act) -> Obs:
        time.sleep(action.sleep_s)
        return Obs(pool_id=id(self.pool), greeting=self.greeting)

    def state(self) -> State:
        return self._state


class Options(BaseModel):
    model_config = {"extra": "forbid"}

    level: int = Field(default=1, ge=1, le=5)


class OptionsEnv(Environment[Act, Obs, State]):
    execution = Execution.INLINE
    reset_options_model = Options

    def reset(self, *, seed: Any = None, episode_id: Any = None, options: Any = None) -> Obs:
        assert isinstance(options, Options)
        return Obs(level=options.level, seed=seed)

    def step(self, action: Act) -> Obs:
        return Obs()

    def state(self) -> State:
        return State()


class AsyncLifespanEnv(OptionsEnv):
    events: list[str] = []

    @classmethod
    @contextlib.asynccontextmanager
    async def process_resources(cls, **env_kwargs: Any) -> AsyncIterator[str]:
        cls.events.append(f"enter {env_kwargs}")
        yield "shared"
        cls.events.append("exit")

    def __init__(self, resources: str, flavour: str) -> None:
        self.resources = resources


MODELS = EnvModels(Act, Obs, State)


def test_resource_built_once_for_many_sessions_and_closed_at_shutdown(serve):
    Pool.built.clear()
    server = serve(PooledEnv, env_kwargs={"greeting": "hello"})
    assert len(Pool.built) == 1
    assert PooledEnv.entered_on[-1] != "test-uvicorn"  # a sync resource is built off the loop
    ids = set()
    clients = [EnvClient(server.url, MODELS) for _ in range(5)]
    for c in clients:
        obs = c.reset().observation
        ids.add(obs.pool_id)
        assert obs.greeting == "hello"
    for c in clients:
        c.close()
    assert ids == {id(Pool.built[0])}
    assert not Pool.built[0].closed
    server.stop()
    assert Pool.built[0].closed


def test_async_resource_and_env_kwargs_from_settings(serve):
    AsyncLifespanEnv.events.clear()
    server = serve(AsyncLifespanEnv, env_kwargs={"flavour": "x"})
    with EnvClient(server.url) as env:
        env.reset()
    server.stop()
    assert AsyncLifespanEnv.events == ["enter {'flavour': 'x'}", "exit"]


def test_reset_options_model_validates_and_is_published(serve):
    server = serve(OptionsEnv)
    with EnvClient(server.url, MODELS) as env:
        assert env.reset(level=3).observation.level == 3
        assert env.reset().observation.level == 1  # the model's default
        with pytest.raises(ValidationFailed, match=r"Invalid reset options: level: Input should be less"):
            env.reset(level=9)
        with pytest.raises(ValidationFailed, match="colour: unknown field"):
            env.reset(colour="red")
    schema = httpx.get(f"{server.url}/schema").json()
    assert schema["reset_options"]["properties"]["level"]["maximum"] == 5


async def test_batch_reset_with_per_item_seeds_and_options(serve):
    server = serve(OptionsEnv)
    async with AsyncEnvClient(server.url, MODELS) as env:
        specs = {f"g{i}": {"seed": 7, "level": 2} for i in range(3)} | {"other": {"seed": 1, "level": 4}}
        out = await env.reset_batch(specs)
        assert [(r.observation.seed, r.observation.level) for r in out] == [(7, 2)] * 3 + [(1, 4)]
        listed = await env.reset_batch(["a", "b"], seed=10, level=5)
        assert [(r.observation.seed, r.observation.level) for r in listed] == [(10, 5), (11, 5)]
        with pytest.raises(BatchError) as info:
            await env.reset_batch({"ok": {"level": 2}, "bad": {"level": 0}})
        ok, bad = info.value.results
        assert ok.observation.level == 2
        assert isinstance(bad, ValidationFailed)
        states = await env.state_batch(["g0", "other"])
        assert [type(s) for s in states] == [State, State]
        await env.close_batch(["g0", "g1"])
        with pytest.raises(BatchError):
            await env.state_batch(["g0"])


def test_a_straggler_fails_alone_under_its_per_item_deadline(serve):
    gate, straggler_returned = threading.Event(), threading.Event()

    class Straggling(PooledEnv):
        def step(self, action: Act) -> Obs:
            if action.hold:  # held until the test has the batch's reply (bounded)
                gate.wait(30)
                straggler_returned.set()
            return super().step(action)

    server = serve(Straggling)
    with EnvClient(server.url, MODELS) as env:
        env.reset_batch(["fast1", "slow", "fast2"])
        try:
            out = env.step_batch(
                {"fast1": Act(), "slow": Act(hold=True), "fast2": Act()},
                timeout_s=1.0,  # the fast two's margin on a loaded host; the reply waits this long
                return_exceptions=True,
            )
            assert not straggler_returned.is_set()  # the reply did not wait for the straggler
        finally:
            gate.set()
    assert isinstance(out[1], DeadlineExceeded)
    assert out[0].observation.greeting == out[2].observation.greeting == "hi"


def test_openenv_serve_passes_env_kwargs(tmp_path):
    from ..conftest import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv.cli", "serve", "tests.server.test_resources:PooledEnv",
         "--port", str(port), "--env-kwargs", '{"greeting": "from the CLI"}'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        wait_served(f"http://127.0.0.1:{port}", proc, 20)
        with EnvClient(f"http://127.0.0.1:{port}", MODELS) as env:
            assert env.reset().observation.greeting == "from the CLI"
    finally:
        proc.terminate()
        proc.wait(10)


def test_health_carries_what_the_env_reports_and_stays_exact_otherwise(serve):
    class Reporting(OptionsEnv):
        @classmethod
        def health(cls) -> dict[str, Any]:
            return {"sandbox": {"level": "rlimits"}}

    reporting = serve(Reporting)
    plain = serve(OptionsEnv)
    expected = {"sandbox": {"level": "rlimits"}, "status": "healthy"}
    assert httpx.get(f"{reporting.url}/health").json() == expected
    assert httpx.get(f"{plain.url}/health").json() == {"status": "healthy"}  # upstream's exact body


def test_serve_in_background_runs_the_lifespan_and_stops():
    from openenv.server import create_app, serve_in_background

    AsyncLifespanEnv.events.clear()
    with serve_in_background(create_app(AsyncLifespanEnv, env_kwargs={"flavour": "y"})) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{server.url}/health").json() == {"status": "healthy"}
        assert AsyncLifespanEnv.events == ["enter {'flavour': 'y'}"]
    assert AsyncLifespanEnv.events[-1] == "exit"
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.url}/health", timeout=2)
