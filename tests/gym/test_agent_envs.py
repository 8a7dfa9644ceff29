"""`RemoteEnv(url)` passes gymnasium's own `check_env` on the shipped agent envs, with
every warning of the checker an error (issue 20: coding failed on a `duration_s` in its
info, terminal and browser on their tagged-union actions)."""

from __future__ import annotations

import shutil
import warnings

import pytest
from gymnasium.utils.env_checker import check_env

from openenv.gym import RemoteEnv
from openenv.gym._spaces import SAMPLE_MAX_LENGTH, AnyText, TaggedUnion
from openenv.server._serve import load_env_class, resolve_target


def env_class(name: str):
    return load_env_class(*resolve_target(name))


ENVS = ["echo", "coding", "terminal", pytest.param("browser", marks=pytest.mark.slow)]


def strictly_checked(env: RemoteEnv) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an observation outside its space is only a warning there
        check_env(env, skip_render_check=True)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", ENVS)
def test_check_env_passes_with_warnings_as_errors(name: str, serve) -> None:
    if name == "browser" and shutil.which("chromium") is None:
        pytest.skip("the browser env needs Debian's chromium (scripts/setup.d/30-browser.sh)")
    server = serve(env_class(name), thread_workers=8)
    env = RemoteEnv(server.url)
    try:
        strictly_checked(env)
    finally:
        env.close()


def test_timings_are_kept_out_of_observation_and_info_but_not_lost(serve) -> None:
    env = RemoteEnv(serve(env_class("coding")).url)
    try:
        assert "duration_s" not in env.observation_space.spaces
        env.reset(seed=0)
        obs, _, _, _, info = env.step({"code": "1 + 1", "submit": 0})
        assert "duration_s" not in info
        assert "duration_s" not in obs
        assert env.last_observation["duration_s"] >= 0  # still there, for who wants it
    finally:
        env.close()


def test_a_tagged_union_action_is_one_of_its_members(serve) -> None:
    env = RemoteEnv(serve(env_class("terminal")).url)
    try:
        space = env.action_space
        assert isinstance(space, TaggedUnion)
        run = space.tags.index("run")
        assert set(space.spaces[run].spaces) == {"command"}
        env.reset(seed=0)
        obs, *_ = env.step((run, {"command": "echo gym"}))
        assert "gym" in obs["output"]
    finally:
        env.close()


def test_unbounded_strings_hold_any_length_but_sample_short() -> None:
    text = AnyText(2**31 - 1)
    assert text.contains("x" * (SAMPLE_MAX_LENGTH * 4))
    text.seed(0)
    assert all(len(text.sample()) <= SAMPLE_MAX_LENGTH for _ in range(20))
