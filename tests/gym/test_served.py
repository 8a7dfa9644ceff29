"""Gymnasium envs served: same seed, same trajectory as in-process; arrays on the wire."""

from __future__ import annotations

import gymnasium
import httpx
import msgpack
import numpy as np
import pytest

from openenv import EnvClient, ValidationFailed
from openenv.gym import RemoteEnv, gym_env_class
from openenv.server._serve import EnvNotFound, load_env_class

from .._served import wait_served
from .._wire import call, connect

STEPS = 60


@pytest.mark.parametrize(
    "env_id", ["CartPole-v1", "MountainCar-v0", "Pendulum-v1", "MountainCarContinuous-v0"]
)
@pytest.mark.parametrize("binary", [True, False], ids=["msgpack", "json"])
def test_same_seed_same_trajectory_as_in_process(serve, env_id, binary):
    server = serve(load_env_class(f"gym:{env_id}"))
    remote = RemoteEnv(server.url, binary=binary)
    local = gymnasium.make(env_id)
    assert remote.action_space == local.action_space
    assert remote.observation_space == local.observation_space
    try:
        for seed in (0, 7):
            o1, _ = remote.reset(seed=seed)
            o2, _ = local.reset(seed=seed)
            np.testing.assert_array_equal(o1, o2)
            assert o1.dtype == o2.dtype
            local.action_space.seed(seed)
            for _ in range(STEPS):
                action = local.action_space.sample()
                r1, r2 = remote.step(action), local.step(action)
                np.testing.assert_array_equal(r1[0], r2[0])  # bit for bit
                assert r1[1:4] == (float(r2[1]), r2[2], r2[3])
                if r2[2] or r2[3]:
                    break
    finally:
        remote.close()
        local.close()


def test_arrays_are_bytes_in_msgpack_and_lists_in_json(serve):
    server = serve(load_env_class("gym:CartPole-v1"))
    ws = connect(server.ws_url, extended=True)
    ws.send(msgpack.packb({"type": "reset", "data": {"seed": 1}}))
    reply = msgpack.unpackb(ws.recv(timeout=10), raw=False)
    obs = reply["data"]["observation"]["observation"]
    assert isinstance(obs["__ndarray__"], bytes)
    assert (obs["dtype"], obs["shape"]) == ("<f4", [4])
    ws.close()
    body = httpx.post(f"{server.url}/reset", json={"seed": 1}, timeout=10).json()
    local, _ = gymnasium.make("CartPole-v1").reset(seed=1)
    assert body["observation"]["observation"] == local.tolist()
    assert np.frombuffer(obs["__ndarray__"], np.float32).tolist() == local.tolist()


def test_bad_action_is_a_validation_error_and_the_session_survives(serve):
    server = serve(load_env_class("gym:CartPole-v1"))
    with EnvClient(server.url) as env:
        env.reset(seed=0)
        with pytest.raises(ValidationFailed, match="not in the action space"):
            env.step({"action": 5})
        with pytest.raises(ValidationFailed):
            env.step({"action": [1, 2]})
        with pytest.raises(ValidationFailed):
            env.step({"move": 1})
        result = env.step({"action": 1})
        assert result.reward == 1.0
        assert set(result.observation) >= {"observation", "terminated", "info"}


def test_gym_env_subclass_by_module_and_class_with_dict_spaces_and_options(serve):
    cls = load_env_class("tests.gym._toy:Walk")
    server = serve(cls)
    remote = RemoteEnv(server.url)
    try:
        obs, info = remote.reset(seed=0, options={"start": 2})
        assert obs["pos"] == 2
        assert obs["grid"].dtype == np.int8
        assert info == {"start": 2}
        obs, reward, terminated, truncated, info = remote.step(1)
        assert (obs["pos"], reward, terminated, truncated, info) == (
            3,
            pytest.approx(-0.1),
            False,
            False,
            {"pos": 3},
        )
        assert remote.step(1)[2] is True
    finally:
        remote.close()


def test_constructor_kwargs_reach_gymnasium_make(serve):
    server = serve(gym_env_class("CartPole-v1", max_episode_steps=3))
    with EnvClient(server.url) as env:
        env.reset(seed=0)
        results = [env.step({"action": i % 2}) for i in range(3)]
    assert [r.truncated for r in results] == [False, False, True]
    assert [r.terminated for r in results] == [False, False, False]  # truncated is not terminated
    assert [r.done for r in results] == [False, False, True]


@pytest.mark.parametrize("extended", [False, True], ids=["upstream-client", "openenv.v1"])
def test_a_time_limit_ends_the_episode_done_and_truncated_on_the_wire(serve, extended):
    # upstream clients read only ``done``: a truncated episode must be done for them too
    server = serve(gym_env_class("CartPole-v1", max_episode_steps=2))
    ws = connect(server.ws_url, extended=extended)
    try:
        call(ws, {"type": "reset", "data": {"seed": 0}})
        replies = [call(ws, {"type": "step", "data": {"action": i % 2}})["data"] for i in range(2)]
    finally:
        ws.close()
    assert [r["done"] for r in replies] == [False, True]
    assert [r["observation"]["terminated"] for r in replies] == [False, False]  # the pole still stands
    if extended:
        assert [r["truncated"] for r in replies] == [False, True]
    else:
        assert all("truncated" not in r for r in replies)


def test_server_env_kwargs_reach_gymnasium_make(serve):
    server = serve(load_env_class("tests.gym._toy:Walk"), env_kwargs={"size": 3})
    remote = RemoteEnv(server.url)
    try:
        assert remote.observation_space["pos"].n == 3  # /schema reflects the kwargs
        obs, _ = remote.reset(seed=0, options={"start": 1})
        assert obs["grid"].shape == (3,)
    finally:
        remote.close()


def test_unknown_gym_id_is_env_not_found():
    with pytest.raises(EnvNotFound, match="gym:NoSuchEnv-v0"):
        load_env_class("gym:NoSuchEnv-v0")


def test_openenv_serve_cli_with_env_kwargs(tmp_path):
    """The real CLI: ``openenv serve gym:CartPole-v1 --env-kwargs ...`` in a child process."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [
        sys.executable,
        "-m",
        "openenv",
        "serve",
        "gym:CartPole-v1",
        "--port",
        str(port),
        "--env-kwargs",
        '{"max_episode_steps": 3}',
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        wait_served(f"http://127.0.0.1:{port}", proc)
        remote = RemoteEnv(f"http://127.0.0.1:{port}")
        remote.reset(seed=0)
        assert [remote.step(i % 2)[3] for i in range(3)] == [False, False, True]
        remote.close()
    finally:
        proc.terminate()
        proc.wait(10)


def test_fast_observation_dumps_as_pydantic_does():
    from openenv._protocol import observation_data

    cls = load_env_class("gym:CartPole-v1")
    model = cls.observation_model
    obs, info = np.arange(4, dtype=np.float32), {"x": np.int64(2), "arr": np.ones(2)}
    fast = model.fast(obs, 1.0, True, False, info)
    slow = model(observation=obs, reward=1.0, terminated=True, truncated=False, done=True, info=info)
    assert isinstance(fast, model)
    assert fast == slow
    for binary in (True, False):
        assert observation_data(fast, binary, True) == observation_data(slow, binary, True)
    assert fast.model_dump(mode="json") == slow.model_dump(mode="json")
    assert fast.model_dump(include={"reward"}) == {"reward": 1.0}  # other call shapes: pydantic's


@pytest.mark.parametrize("binary", [True, False], ids=["msgpack", "json"])
def test_typed_client_with_the_gym_models(serve, binary):
    from openenv import EnvModels, State
    from openenv.gym import GymAction, GymObservation

    server = serve(load_env_class("gym:CartPole-v1"))
    local, _ = gymnasium.make("CartPole-v1").reset(seed=4)
    with EnvClient(server.url, EnvModels(GymAction, GymObservation, State), binary=binary) as env:
        obs = env.reset(seed=4).observation
        assert isinstance(obs, GymObservation)
        if binary:  # arrays come back as arrays, dtype and all
            assert obs.observation.dtype == np.float32
            np.testing.assert_array_equal(obs.observation, local)
        else:  # JSON: lists
            assert obs.observation == local.tolist()
        result = env.step(GymAction(action=np.int64(1)))
        assert result.reward == 1.0
        assert result.observation.terminated is False
