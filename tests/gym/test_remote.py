"""``RemoteEnv`` and ``RemoteVectorEnv`` over live servers; gymnasium's own checker."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from echo_env import EchoEnv
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import SyncVectorEnv

from openenv.gym import AnyText, RemoteEnv, RemoteVectorEnv
from openenv.server._serve import load_env_class


def checked(env: gymnasium.Env) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's advice (e.g. infinite Box bounds) is not a failure
        check_env(env, skip_render_check=True)


def test_check_env_passes_on_served_cartpole(serve):
    server = serve(load_env_class("gym:CartPole-v1"))
    env = RemoteEnv(server.url)
    try:
        checked(env)
    finally:
        env.close()


def test_check_env_passes_on_a_text_env(serve):
    server = serve(EchoEnv)
    env = RemoteEnv(server.url)
    try:
        assert env.action_space == gymnasium.spaces.Dict({"message": AnyText(65536)})
        checked(env)
        obs, _ = env.reset(seed=0)
        assert obs["echoed_message"] == "Echo environment ready!"
        obs, reward, terminated, truncated, _info = env.step({"message": "hello"})
        assert obs["echoed_message"] == "hello"
        assert int(obs["message_length"]) == 5
        assert reward == pytest.approx(0.5)
        assert (terminated, truncated) == (False, False)
        assert env.step({"message": "exit"})[2] is True
    finally:
        env.close()


def test_registered_id_and_reset_options(serve):
    import openenv.gym  # noqa: F401  (registers openenv/Remote-v0)

    server = serve(EchoEnv)
    env = gymnasium.make("openenv/Remote-v0", url=server.url, reset_options={"max_steps": 2})
    try:
        env.reset(seed=0)
        assert env.step({"message": "a"})[3] is False
        assert env.step({"message": "b"})[3] is True  # truncated by the reset option
    finally:
        env.close()
    env = gymnasium.make("openenv.gym:openenv/Remote-v0", url=server.url)
    env.close()
    vec = gymnasium.make_vec(
        "openenv/Remote-v0", num_envs=3, vectorization_mode="vector_entry_point", url=server.url
    )
    try:
        assert isinstance(vec, RemoteVectorEnv)
        obs, _ = vec.reset(seed=0)
        assert list(obs["echoed_message"]) == ["Echo environment ready!"] * 3
    finally:
        vec.close()


def test_declared_spaces_win(serve):
    server = serve(load_env_class("gym:CartPole-v1"))
    box = gymnasium.spaces.Box(-10, 10, (4,), np.float32)
    env = RemoteEnv(server.url, observation_space=box)
    try:
        assert env.observation_space == box
        assert env.reset(seed=0)[0] in box
    finally:
        env.close()


def test_vector_of_64_sessions_matches_sync_vector_env_step_for_step(serve):
    n = 64
    server = serve(load_env_class("gym:CartPole-v1"), max_sessions=n)
    remote = RemoteVectorEnv(server.url, n)
    local = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1") for _ in range(n)])
    try:
        assert server.active == 0
        o1, _ = remote.reset(seed=100)
        o2, _ = local.reset(seed=100)
        assert server.active == n
        np.testing.assert_array_equal(o1, o2)
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(80):  # several episodes end and restart (next-step autoreset)
            actions = rng.integers(0, 2, n)
            r1, r2 = remote.step(actions), local.step(actions)
            for a, b in zip(r1[:4], r2[:4], strict=True):
                np.testing.assert_array_equal(a, b)
            ended += int(np.sum(r2[2] | r2[3]))
        assert ended > n  # the autoreset path was exercised, and it matched
    finally:
        remote.close()
        local.close()
    server.wait_active(0)
