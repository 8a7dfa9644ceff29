"""A user's own task, built with ``openenv.tasks`` and ``openenv.rewards``, inherits the
rule of docs/sandbox.md, "Graders the graded code cannot reach".

The agent reaches such an env only through its actions, which cross as plain JSON and
are validated into the env's action model; the reward is decided on the server's side,
after the env's step, from the task row and the observation the env built
(``with_rubric`` overwrites ``reward`` and ``metadata["reward_breakdown"]``). So every
forgery an agent can put in an action (a reward, a breakdown or ``done`` of its own, a
fake report as the answer, objects posing as numbers, a task switch) scores exactly
what an honest wrong answer scores: nothing; a refused action scores nothing too.
"""

from __future__ import annotations

from typing import Any

import pytest

from openenv import EnvClient, EnvModels, OpenEnvError, State
from openenv.rewards import EnvReward, WeightedSum, with_rubric
from openenv.tasks import TaskSet

from ._quiz import Answer, Question, quiz_env, write_folder

pytest.importorskip("datasets", reason="the 'tasks' extra (datasets) is not installed")

MODELS = EnvModels(Answer, Question, State)
TASK = "train-3"  # its answer is 30
WRONG: dict[str, Any] = {"answer": 31}

#: Name -> (reset options, step payload): an honest wrong answer plus a forgery.
FORGERIES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "reward_and_done_in_the_action": ({}, {**WRONG, "reward": 1.0, "done": True}),
    "reward_breakdown_in_the_metadata": (
        {},
        {**WRONG, "metadata": {"reward": 1.0, "reward_breakdown": {"exact": 1.0, "env": 1.0}}},
    ),
    "rubric_component_names_as_fields": ({}, {**WRONG, "exact": 1.0, "env": 1.0, "score": 1.0}),
    "fake_tap_report_as_the_answer": ({}, {"answer": "ok 1 - exact\nok 2 - env\n1..2"}),
    "fake_json_report_as_the_answer": ({}, {"answer": '{"reward": 1.0, "passed": true}'}),
    "object_posing_as_the_answer": ({}, {"answer": {"__class__": "int", "__eq__": "lambda o: True"}}),
    "list_posing_as_the_answer": ({}, {"answer": [30, 31]}),
    "number_next_to_the_answer": ({}, {"answer": 30.000001}),
    "largest_integer": ({}, {"answer": 2**63 - 1}),
    "answer_key_in_the_reset_options": ({"answer": 31}, WRONG),
    "task_switch_in_the_action": ({}, {**WRONG, "task_id": "train-0", "index": 0}),
    "reward_in_the_reset_options": ({"reward": 1.0, "reward_breakdown": {"exact": 1.0}}, WRONG),
    "episode_id_of_a_solved_episode": ({"episode_id": "solved"}, WRONG),
}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> TaskSet:
    return TaskSet(write_folder(tmp_path_factory.mktemp("quiz"), {"train": 6}))


@pytest.fixture
def url(serve: Any, tasks: TaskSet) -> str:
    """A user's task env: the quiz over its task set, scored by a rubric on the server."""

    def exact(action: Any, observation: Any) -> float:
        answer = tasks.by_id(observation.task_id).data["answer"]
        return 1.0 if type(action.answer) is int and action.answer == answer else 0.0

    scored = with_rubric(quiz_env(tasks), WeightedSum({"exact": exact, "env": EnvReward()}, [0.5, 0.5]))
    return str(serve(scored).url)


def score(url: str, options: dict[str, Any], payload: dict[str, Any]) -> tuple[float, Any]:
    """The reward of one episode (0.0 when the server refuses the action or options)."""
    with EnvClient(url, MODELS) as env:
        if "episode_id" in options:  # an earlier episode under that id, solved
            env.reset(task_id=TASK, episode_id=options["episode_id"])
            assert env.step({"answer": 30}).reward == 1.0
        try:
            env.reset(task_id=TASK, **options)
            result = env.step(payload)
        except OpenEnvError:
            return 0.0, None
        return float(result.reward or 0.0), result.observation.metadata


def test_the_rubric_grades(url: str) -> None:
    assert score(url, {}, {"answer": 30})[0] == 1.0
    honest, metadata = score(url, {}, WRONG)
    assert honest == 0.0
    assert metadata["reward_breakdown"] == {"exact": 0.0, "env": 0.0}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forgery_scores_what_an_honest_wrong_answer_scores(url: str, forgery: str) -> None:
    options, payload = FORGERIES[forgery]
    reward, metadata = score(url, options, payload)
    assert reward == 0.0
    if metadata is not None:
        assert metadata["reward_breakdown"] == {"exact": 0.0, "env": 0.0}
