"""The ``random`` and ``null`` baselines on a tool env whose action is a tagged union of
typed fields (an enum, bounded integers, an integer with only a lower bound above the
default range, a number or null, a string of bounded length), served for real: every
random action is one the env takes (no turn refused as invalid, none an error), the same
seed plays the same actions, another seed others; null stops at once. And the policy
time is split from the env time in each turn and trajectory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field, RootModel

from openenv import Action, Environment, Execution, Observation, State
from openenv.eval import EvalConfig, load_trajectories, run_eval
from openenv.policy import RandomPolicy, policy_from_spec
from openenv.server import create_app, serve_in_background

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


class Move(Action):
    type: Literal["move"] = "move"
    direction: Literal["n", "s", "e", "w"]
    steps: int = Field(ge=1, le=3)
    fast: bool = False


class Wait(Action):
    type: Literal["wait"] = "wait"
    ticks: int = Field(ge=20)  # a lower bound above the range drawn where no bound is given
    seconds: float | None = Field(default=None, ge=0.5, le=2.0)
    note: str = Field(min_length=2, max_length=4)


class GridAction(RootModel[Annotated[Move | Wait, Field(discriminator="type")]]):
    """Either member, told apart by its ``type`` tag."""


class GridObservation(Observation):
    moved: int = 0


class GridEnv(Environment[GridAction, GridObservation, State]):  # type: ignore[type-var]
    """Pays 0.1 a step moved; three actions end the episode."""

    execution = Execution.INLINE

    def reset(
        self, *, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> GridObservation:
        self._state, self._moved = State(episode_id=episode_id), 0
        return GridObservation()

    def step(self, action: GridAction) -> GridObservation:
        self._state.step_count += 1
        act = action.root
        gained = act.steps if isinstance(act, Move) else 0
        self._moved += gained
        return GridObservation(moved=self._moved, reward=0.1 * gained, done=self._state.step_count >= 3)

    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def grid() -> Iterator[str]:
    with serve_in_background(create_app(GridEnv)) as server:
        yield server.url


def _plays(out: Path) -> dict[tuple[str, int], list[Any]]:
    return {t.key: [turn.action for turn in t.turns] for t in load_trajectories(out)}


def test_random_draws_valid_actions_of_every_member_seeded_by_the_episode(grid: str, tmp_path: Path) -> None:
    def run(out: str, seed: int) -> dict[str, Any]:
        config = EvalConfig(env=grid, policy="random", out=tmp_path / out, count=4, samples=2, seed=seed)
        return run_eval(config)

    results = run("a", 0)
    assert (results["episodes"], results["errors"], results["parse_failures"]) == (8, 0, 0)
    trajectories = load_trajectories(tmp_path / "a")
    assert all(t.status == "done" and len(t.turns) == 3 for t in trajectories)
    actions = [turn.action for t in trajectories for turn in t.turns]
    for action, call in zip(
        actions, [c for t in trajectories for turn in t.turns for c in turn.tool_calls], strict=True
    ):
        assert action is not None
        assert call["name"] == action["type"]  # one tool per member, named by its tag
        GridAction.model_validate(action)  # what the env took
        if action["type"] == "wait":
            assert action["ticks"] >= 20
            assert 2 <= len(action["note"]) <= 4
    assert {a["type"] for a in actions if a} == {"move", "wait"}
    assert {a["direction"] for a in actions if a and a["type"] == "move"} > {"n"}
    moved = sum(a["steps"] for a in actions if a and a["type"] == "move")
    assert results["mean_reward"] == pytest.approx(0.1 * moved / 8)

    run("b", 0)
    run("c", 1)
    assert _plays(tmp_path / "b") == _plays(tmp_path / "a")
    assert _plays(tmp_path / "c") != _plays(tmp_path / "a")


def test_null_stops_at_once_on_a_tool_env(grid: str, tmp_path: Path) -> None:
    results = run_eval(EvalConfig(env=grid, policy="null", out=tmp_path, count=2, max_turns=5))
    assert (results["episodes"], results["errors"], results["mean_reward"]) == (2, 0, 0.0)
    assert all([turn.action for turn in t.turns] == [None] for t in load_trajectories(tmp_path))


def test_a_random_spec_takes_its_options() -> None:
    policy = policy_from_spec("random?max_chars=3")
    assert isinstance(policy, RandomPolicy)
    assert policy.max_chars == 3


def test_each_turn_splits_policy_time_from_env_time(tmp_path: Path) -> None:
    """``slow_seeded_echo`` takes at least 50 ms a turn: that is policy time, not env
    time, and an episode's wall time holds both."""
    results = run_eval(
        EvalConfig(
            env=str(ROOT / "envs" / "echo_env"),
            policy="python:tests.eval._policies:slow_seeded_echo",
            out=tmp_path,
            count=2,
            max_turns=2,
        )
    )
    trajectories = load_trajectories(tmp_path)
    turns = [turn for t in trajectories for turn in t.turns]
    assert len(turns) == 4
    assert all(turn.policy_s >= 0.05 and turn.env_s > 0 for turn in turns)
    for t in trajectories:
        assert t.policy_s == pytest.approx(sum(turn.policy_s for turn in t.turns))
        assert t.wall_s >= t.policy_s + t.env_s
    assert results["policy_s"] == pytest.approx(sum(t.policy_s for t in trajectories))
    assert results["env_s"] == pytest.approx(sum(t.env_s for t in trajectories))
