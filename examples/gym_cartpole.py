"""Gymnasium both ways: serve CartPole-v1, drive it as a gymnasium.Env and a VectorEnv.

    python examples/gym_cartpole.py

Serves ``gym:CartPole-v1`` (what ``openenv serve gym:CartPole-v1`` serves) on a free
port; checks the remote env with gymnasium's own ``check_env``; runs one episode with
a hand-written policy; steps 8 sessions at once through one connection.
"""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
from gymnasium.utils.env_checker import check_env

import openenv.gym  # registers "openenv/Remote-v0"
from openenv.server import create_app, serve_in_background
from openenv.server._serve import load_env_class


def policy(obs: np.ndarray) -> int:
    """Push the cart towards where the pole is falling."""
    return int(obs[2] + 0.5 * obs[3] > 0)


def main() -> None:
    server = serve_in_background(create_app(load_env_class("gym:CartPole-v1")))
    url = server.url
    try:
        env = gymnasium.make("openenv/Remote-v0", url=url)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # check_env's advice on infinite Box bounds
            check_env(env.unwrapped, skip_render_check=True)
        print(f"check_env passed; spaces {env.action_space} {env.observation_space}")

        obs, _ = env.reset(seed=0)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total += reward
            done = terminated or truncated
        local = gymnasium.make("CartPole-v1")
        obs, _ = local.reset(seed=0)
        local_total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = local.step(policy(obs))
            local_total += float(reward)
            done = terminated or truncated
        print(f"episode return served {total:.0f}, in-process {local_total:.0f} (same seed, same trajectory)")
        env.close()

        vec = openenv.gym.RemoteVectorEnv(url, 8)
        obs, _ = vec.reset(seed=0)
        returns = np.zeros(8)
        for _ in range(100):
            obs, rewards, terminated, truncated, _ = vec.step(np.array([policy(o) for o in obs]))
            returns += rewards
        print(f"8 sessions on one connection, 100 steps: rewards {returns.astype(int).tolist()}")
        vec.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
