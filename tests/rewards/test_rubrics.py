"""Rubric composition against hand-computed values; sync and async; trajectories."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from openenv import Observation
from openenv.rewards import (
    DiscountedTrajectoryRubric,
    EnvReward,
    Gate,
    Rubric,
    Sequential,
    TrajectoryRubric,
    WeightedSum,
    as_rubric,
)


def obs(reward: float | None = None, done: bool = False, **metadata: object) -> Observation:
    return Observation(reward=reward, done=done, metadata=dict(metadata))


class Length(Rubric):
    def forward(self, action, observation) -> float:
        return min(len(action) / 10, 1.0)


class SlowJudge(Rubric):
    """An async judge (stands for a model call)."""

    async def forward(self, action, observation) -> float:
        await asyncio.sleep(0.001)
        return 0.5 if "ok" in action else 0.0


def has_please(action, observation) -> float:
    return 1.0 if "please" in action else 0.0


def test_weighted_sum_by_name_and_by_order():
    r = WeightedSum(
        {"len": Length(), "polite": has_please, "env": EnvReward()},
        weights={"len": 0.5, "polite": 2.0, "env": 0.25},
    )
    assert r("please!", obs(reward=4.0)) == pytest.approx(0.5 * 0.7 + 2.0 * 1.0 + 0.25 * 4.0)
    assert r.breakdown() == {"len": pytest.approx(0.7), "polite": 1.0, "env": 4.0}
    seq = WeightedSum([Length(), has_please], [0.1, 0.9])
    assert seq("abc", obs()) == pytest.approx(0.03)
    assert list(seq.breakdown()) == ["length", "has_please"]
    assert WeightedSum([has_please, has_please])("please", obs()) == 2.0  # default weights 1.0
    assert list(WeightedSum([has_please, has_please]).weights) == ["has_please", "has_please_2"]
    with pytest.raises(ValueError, match="weights"):
        WeightedSum({"a": has_please}, weights={"b": 1.0})
    with pytest.raises(ValueError, match="2 weights for 1"):
        WeightedSum([has_please], [0.5, 0.5])


def test_gate_and_sequential():
    gate = Gate(Length(), threshold=0.5)
    assert gate("abcd", obs()) == 0.0
    assert gate("abcdefgh", obs()) == pytest.approx(0.8)
    seq = Sequential(Gate(has_please), Length())
    assert seq("please do", obs()) == pytest.approx(0.9)
    assert seq.breakdown() == {"gate": 1.0, "gate.has_please": 1.0, "length": pytest.approx(0.9)}
    assert seq("do it", obs()) == 0.0
    assert seq.breakdown() == {"gate": 0.0, "gate.has_please": 0.0}  # length was skipped


def test_nested_named_children_breakdown():
    class Quality(Rubric):
        def __init__(self) -> None:
            super().__init__()
            self.length = Length()
            self.polite = as_rubric(has_please)

        def forward(self, action, observation) -> float:
            return (self.length(action, observation) + self.polite(action, observation)) / 2

    r = WeightedSum({"quality": Quality(), "env": EnvReward()}, [1.0, 1.0])
    assert r("please", obs(reward=1.0)) == pytest.approx((0.6 + 1.0) / 2 + 1.0)
    assert r.breakdown() == {
        "quality": pytest.approx(0.8),
        "quality.length": pytest.approx(0.6),
        "quality.polite": 1.0,
        "env": 1.0,
    }  # attribute names
    assert r.get_rubric("quality.length").last_score == pytest.approx(0.6)


async def test_async_rubrics_in_containers():
    r = WeightedSum({"judge": SlowJudge(), "len": Length()}, [2.0, 1.0])
    assert r.is_blocking
    assert await r.acall("ok go", obs()) == pytest.approx(2 * 0.5 + 0.5)
    assert r.breakdown() == {"judge": 0.5, "len": pytest.approx(0.5)}

    async def async_fn(action, observation) -> float:
        return 0.25

    assert await Gate(async_fn, threshold=0.2).acall("x", obs()) == 0.25
    with pytest.raises(TypeError, match=r"use `await rubric\.acall"):
        r("ok", obs())  # sync call on the event loop thread


def test_async_rubric_called_synchronously_off_the_loop():
    assert WeightedSum({"judge": SlowJudge()})("ok", obs()) == 0.5


def test_trajectory_rubric_pays_at_done():
    def won(trajectory) -> float:
        return 1.0 if trajectory[-1][1].metadata.get("won") else 0.0

    r = TrajectoryRubric(won, intermediate=-0.01)
    assert [r(a, obs()) for a in "abc"] == [-0.01] * 3
    assert r("d", obs(done=True, won=True)) == 1.0
    assert r.step_rewards() == [0.0, 0.0, 0.0, 1.0]
    assert len(r.trajectory) == 4
    r.reset()
    assert r.trajectory == []
    assert r.step_rewards() == []


def test_discounted_trajectory_credits_backwards():
    r = DiscountedTrajectoryRubric(lambda t: 2.0, gamma=0.5)
    for _ in range(3):
        r("a", obs())
    assert r("a", obs(done=True)) == 2.0
    assert r.step_rewards() == [0.25, 0.5, 1.0, 2.0]
    with pytest.raises(ValueError, match="gamma"):
        DiscountedTrajectoryRubric(gamma=1.5)


def test_trajectory_inside_a_sum_and_reset_reaches_children():
    traj = TrajectoryRubric(lambda t: float(len(t)), name="episode_len")
    r = WeightedSum([traj, Length()], [1.0, 0.0])
    assert r("a", obs()) == 0.0
    assert r("a", obs(done=True)) == 2.0
    r.reset()
    assert traj.trajectory == []


def test_clone_is_independent_and_apply_stamps_the_observation():
    traj = TrajectoryRubric(lambda t: 1.0)
    copy = traj.clone()
    copy("a", obs())
    assert traj.trajectory == []
    o = Length().apply("abcde", obs(reward=9.0))
    assert o.reward == 0.5
    assert o.metadata["reward_breakdown"] == {"length": 0.5}
    o = WeightedSum({"a": has_please}).apply("please", obs())
    assert o.metadata["reward_breakdown"] == {"a": 1.0}


def test_bad_children_and_missing_forward():
    with pytest.raises(TypeError, match="not a rubric"):
        as_rubric(3)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        Rubric()("a", SimpleNamespace())


def test_empty_sequential_scores_one_as_upstream():
    """Nothing failed: 1.0, as upstream 0.10 (ours said 0.0 while openenv.core said 1.0)."""
    from openenv.core.rubrics import Sequential as UpstreamSequential

    assert Sequential()("a", obs()) == 1.0
    assert UpstreamSequential()("a", obs()) == 1.0


def test_hooks_state_dict_and_awaitable_call_are_options_of_ours():
    seen = []
    rubric = WeightedSum({"len": Length(), "fixed": lambda a, o: 0.5})
    rubric.register_forward_pre_hook(lambda r, a, o: seen.append(("pre", a)))
    rubric.register_forward_hook(lambda r, a, o, score: seen.append(("post", score)))
    assert rubric("x" * 5, obs()) == 1.0
    assert seen == [("pre", "x" * 5), ("post", 1.0)]
    assert asyncio.run(rubric.acall("x" * 10, obs())) == 1.5
    assert seen[-1] == ("post", 1.5)

    class Slow(Rubric):
        awaitable_call = True
        state_fields = {"weight": "w"}

        def __init__(self):
            super().__init__()
            self.w = 2.0

        async def forward(self, action, observation):
            return self.w

    slow = Slow()
    pending = slow("a", obs())
    assert asyncio.iscoroutine(pending)
    assert asyncio.run(pending) == 2.0
    assert slow.state_dict() == {"weight": 2.0}
    slow.load_state_dict({"weight": 3.0, "other": 1})
    assert slow.w == 3.0
    with pytest.raises(ValueError, match=r"sum to 1\.0"):
        WeightedSum([Length()], weights=[0.5], normalized=True)
