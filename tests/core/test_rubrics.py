"""``openenv.core.rubrics``: upstream's rubric API on our reward drivers."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from openenv import rewards
from openenv.core.rubrics import (
    ExponentialDiscountingTrajectoryRubric,
    Gate,
    Rubric,
    RubricDict,
    RubricList,
    Sequential,
    TrajectoryRubric,
    WeightedSum,
)


class Fixed(Rubric):
    def __init__(self, score: float) -> None:
        super().__init__()
        self.score = score

    def forward(self, action: Any, observation: Any) -> float:
        return self.score


class SlowAsync(Rubric):
    def __init__(self, score: float) -> None:
        super().__init__()
        self.score = score

    async def forward(self, action: Any, observation: Any) -> float:
        await asyncio.sleep(0.01)
        return self.score


def test_forward_is_abstract() -> None:
    with pytest.raises(TypeError):
        Rubric()  # type: ignore[abstract]


def test_is_one_of_ours_and_records_its_score() -> None:
    rubric = Fixed(0.5)
    assert isinstance(rubric, rewards.Rubric)
    assert rubric("a", "o") == 0.5
    assert rubric.last_score == 0.5


def test_hooks_run_around_every_scoring_including_children() -> None:
    seen: list[tuple[str, Any]] = []
    child = Fixed(1.0)
    child.register_forward_pre_hook(lambda r, a, o: seen.append(("pre", a)))
    child.register_forward_hook(lambda r, a, o, s: seen.append(("post", s)))
    assert Gate(child, threshold=0.5)("act", "obs") == 1.0
    assert seen == [("pre", "act"), ("post", 1.0)]


def test_containers_name_children_as_upstream() -> None:
    total = WeightedSum([Fixed(1.0), Gate(Fixed(0.2), threshold=0.5)], weights=[0.6, 0.4])
    assert total("a", "o") == pytest.approx(0.6)
    assert [name for name, _ in total.named_rubrics()] == ["rubric_0", "rubric_1", "rubric_1.rubric"]
    assert total.get_rubric("rubric_1.rubric").last_score == 0.2
    assert total.breakdown() == {"rubric_0": 1.0, "rubric_1": 0.0, "rubric_1.rubric": 0.2}
    with pytest.raises(KeyError, match="Rubric path not found"):
        total.get_rubric("nope")
    assert total.weights == [0.6, 0.4]  # upstream's list (ours: by name)
    with pytest.raises(ValueError, match=r"sum to 1\.0"):
        WeightedSum([Fixed(1.0)], weights=[0.5])
    gate = Gate(Fixed(0.2), threshold=0.1)
    seq = Sequential(Fixed(0.5), gate)
    assert (gate.rubric.score, len(seq), seq[1]) == (0.2, 2, gate)


def test_sequential_stops_at_zero() -> None:
    assert Sequential(Fixed(0.7), Fixed(0.9))("a", "o") == 0.9
    late = Fixed(1.0)
    assert Sequential(Fixed(0.0), late)("a", "o") == 0.0
    assert late.last_score is None
    assert Sequential()("a", "o") == 1.0


def test_async_children_make_the_call_awaitable_and_run_concurrently() -> None:
    rubric = WeightedSum([SlowAsync(1.0), SlowAsync(0.0), Fixed(0.5)], weights=[0.5, 0.25, 0.25])

    async def main() -> float:
        pending = rubric("a", "o")
        assert asyncio.iscoroutine(pending)
        return float(await pending)

    assert asyncio.run(main()) == pytest.approx(0.625)


def test_list_and_dict_hold_children_for_a_parent() -> None:
    class PerGame(Rubric):
        def __init__(self) -> None:
            super().__init__()
            self.games = RubricDict({"pong": Fixed(1.0), "chess": Fixed(0.25)})
            self.extra = RubricList([Fixed(0.0)])

        def forward(self, action: Any, observation: Any) -> float:
            return float(self.games[observation.game](action, observation))

    parent = PerGame()
    assert parent("a", SimpleNamespace(game="chess")) == 0.25
    assert "pong" in parent.games
    assert len(parent.extra) == 1
    assert parent.get_rubric("games.chess").last_score == 0.25
    with pytest.raises(NotImplementedError):
        parent.extra("a", "o")


def test_trajectory_rubric_pays_on_done_and_discounts() -> None:
    class Outcome(ExponentialDiscountingTrajectoryRubric):
        def score_trajectory(self, trajectory: list[tuple[Any, Any]]) -> float:
            return float(trajectory[-1][1].reward)

    rubric = Outcome(gamma=0.5, intermediate_reward=0.1)
    assert isinstance(rubric, rewards.TrajectoryRubric)
    scores = [rubric(i, SimpleNamespace(done=i == 2, reward=8.0)) for i in range(3)]
    assert scores == [0.1, 0.1, 8.0]
    assert rubric.compute_step_rewards() == [2.0, 4.0, 8.0]
    partial = Outcome(gamma=0.5)
    partial("a", SimpleNamespace(done=False, reward=4.0))
    assert partial.compute_step_rewards() == [4.0]  # as upstream: scored before the end too
    copy = rubric.trajectory
    copy.clear()
    assert len(rubric.trajectory) == 3
    assert rubric.state_dict() == {"intermediate_reward": 0.1, "gamma": 0.5}
    rubric.reset()
    assert rubric.trajectory == []
    assert rubric.compute_step_rewards() == []
    with pytest.raises(ValueError, match="gamma"):
        Outcome(gamma=2.0)
    with pytest.raises(TypeError):
        TrajectoryRubric()  # type: ignore[abstract]


def test_serves_through_our_with_rubric() -> None:
    """An upstream-style rubric plugs into our env wrapper like any of ours."""
    from openenv import Action, Environment, Observation, State

    class Msg(Action):
        text: str = ""

    class Out(Observation):
        text: str = ""

    class Long(Rubric):
        def forward(self, action: Msg, observation: Out) -> float:
            return 1.0 if len(action.text) > 3 else 0.0

    class Echo(Environment[Msg, Out, State]):
        def reset(self, *, seed: int | None = None, episode_id: str | None = None,
                  options: dict[str, Any] | None = None) -> Out:
            return Out()

        def step(self, action: Msg) -> Out:
            return Out(text=action.text)

        @property
        def state(self) -> State:
            return State()

    env = rewards.with_rubric(Echo, Long())()
    env.reset()
    assert env.step(Msg(text="hello")).reward == 1.0
    assert env.step(Msg(text="hi")).reward == 0.0
