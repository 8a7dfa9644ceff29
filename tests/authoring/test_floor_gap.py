"""``semantic.floor_gap``: the null policy is judged per episode (it is deterministic); the
random policy by its measured floor, the mean over its episodes, so that one lucky click on
the right one of two buttons does not fail an env whose random agent is far below the floor."""

from __future__ import annotations

from types import SimpleNamespace

from openenv._vmanifest import RewardDeclaration
from openenv.authoring._policy import CheckStatus
from openenv.authoring._semantic import _floor_gap
from openenv.authoring._vreport import Results


def _episodes(policy: str, *rewards: float) -> list[SimpleNamespace]:
    return [SimpleNamespace(policy=policy, task_id=f"t{i}", reward=r) for i, r in enumerate(rewards)]


def _judge(null: list[SimpleNamespace], random: list[SimpleNamespace]) -> tuple[CheckStatus, list[str]]:
    results = Results()
    block = SimpleNamespace(reward=RewardDeclaration(floor_margin=0.1))  # range (0, 1): the floor is 0.9
    _floor_gap(null, random, block, results)  # type: ignore[arg-type]
    (result,) = results.items
    return result.status, result.evidence


def test_one_lucky_random_episode_is_not_the_random_floor() -> None:
    status, evidence = _judge(_episodes("null", 0, 0, 0), _episodes("random", 0, 1.0, 0, -1.0))
    assert status is CheckStatus.PASS
    assert "1 of its episodes went over the floor by chance" in evidence[0]


def test_a_random_policy_whose_mean_reaches_the_top_fails() -> None:
    status, evidence = _judge(_episodes("null", 0, 0), _episodes("random", 1.0, 1.0, 0.95))
    assert status is CheckStatus.FAIL
    assert evidence == ["the random policy's mean over 3 episodes was 0.983 (the floor is 0.9)"]


def test_any_null_episode_over_the_floor_fails() -> None:
    status, evidence = _judge(_episodes("null", 0, 1.0), _episodes("random", 0, 0))
    assert status is CheckStatus.FAIL
    assert evidence == ["task t1: the null policy scored 1.0 (the floor is 0.9)"]
