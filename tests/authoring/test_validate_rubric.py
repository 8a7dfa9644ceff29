"""``runtime.rubric_introspectable`` and ``runtime.reward_attribution``, for an env that
declares ``rubric_tree``: its rubric's parts are named, and a step's reward is the
rubric's own score; an env whose reward does not come from its rubric fails, with the
reward and the score as evidence."""

from __future__ import annotations

from openenv._manifest import load_manifest
from openenv.authoring._applicable import declared_not_applicable
from openenv.authoring._policy import CheckStatus
from openenv.authoring._rubric import run_rubric
from openenv.authoring._vreport import Results

from ._flawed import BLOCK, make_env

RUBRIC_BLOCK = BLOCK.replace(
    "      kind: reward_channel\n", "      kind: reward_channel\n    rubric_tree: true\n"
)

SOURCE = """\
import uuid
from openenv import Action, Environment, Execution, Observation, State
from openenv.rewards import Rubric


class TextAction(Action):
    message: str


class TextObservation(Observation):
    text: str = ""


class Length(Rubric):
    def forward(self, action, observation):
        return min(len(action.message), 10) / 10


class Polite(Rubric):
    def forward(self, action, observation):
        return 1.0 if "please" in action.message else 0.0


class Total(Rubric):
    def __init__(self):
        super().__init__()
        self.length = Length()
        self.polite = Polite()

    def forward(self, action, observation):
        return 0.5 * self.length(action, observation) + 0.5 * self.polite(action, observation)


class Env(Environment[TextAction, TextObservation, State]):
    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state = State()
        self.rubric = Total()

    def reset(self, *, seed=None, episode_id=None, options=None) -> TextObservation:
        self._state = State(episode_id=episode_id or uuid.uuid4().hex)
        return TextObservation(text="say something", reward=0.0)

    def step(self, action: TextAction) -> TextObservation:
        self._state.step_count += 1
        observation = TextObservation(text=action.message, done=True)
        observation.reward = REWARD
        return observation

    def state(self) -> State:
        return self._state.model_copy()
"""
HONEST = SOURCE.replace("REWARD", "self.rubric(action, observation)")
#: scores with its rubric, then hands out a constant instead
CONSTANT = SOURCE.replace("REWARD", "(self.rubric(action, observation), 1.0)[1]")


def test_a_rubric_tree_is_introspected_and_the_reward_attributed_to_it(tmp_path):
    folder = make_env(tmp_path, HONEST, block=RUBRIC_BLOCK)
    results = Results()
    run_rubric(folder, {"message": "please"}, results)  # what --level runtime runs for it
    got = {r.check_id: r for r in results.items}
    tree = got["runtime.rubric_introspectable"]
    assert tree.status is CheckStatus.PASS, tree.evidence
    assert tree.measured["parts"] == ["length", "polite"]
    attributed = got["runtime.reward_attribution"]
    assert attributed.status is CheckStatus.PASS, attributed.evidence
    assert attributed.measured["breakdown"] == {"length": 0.6, "polite": 1.0}
    assert attributed.measured["reward"] == attributed.measured["rubric_score"] == 0.8
    # declared, so not N/A (as upstream: its runner selects them by rubric_tree)
    block = load_manifest(folder).validation_block()
    assert not declared_not_applicable(None, block).keys() & set(got)


def test_a_reward_that_is_not_the_rubrics_fails_attribution(tmp_path):
    results = Results()
    run_rubric(make_env(tmp_path, CONSTANT, block=RUBRIC_BLOCK), {"message": "hello"}, results)
    got = {r.check_id: r for r in results.items}
    assert got["runtime.rubric_introspectable"].status is CheckStatus.PASS
    wrong = got["runtime.reward_attribution"]
    assert wrong.status is CheckStatus.FAIL
    assert wrong.evidence == ["the step's reward 1.0 is not the rubric's score 0.25"]
    assert wrong.remediation is not None
    assert "self.rubric(action, observation)" in wrong.remediation


def test_a_declared_rubric_tree_without_a_rubric_fails(tmp_path):
    source = HONEST.replace("        self.rubric = Total()\n", "").replace(
        "self.rubric(action, observation)", "0.5"
    )
    results = Results()
    run_rubric(make_env(tmp_path, source, block=RUBRIC_BLOCK), {"message": "hello"}, results)
    got = {r.check_id: r for r in results.items}
    tree = got["runtime.rubric_introspectable"]
    assert (tree.status, tree.evidence) == (
        CheckStatus.FAIL,
        ["flawed_env.Env: rubric_tree is declared, but its rubric is missing"],
    )
    assert got["runtime.reward_attribution"].status is CheckStatus.SKIP
