"""The page probes (``openenv.authoring._probes_browser``) on a page env written with the
flaws they look for: a ``javascript:`` URL that ends the episode solved, a score read
from a ``data:`` page the agent wrote, typed markup that runs, and a reward display in
the observation. Each is caught by the check meant for it, with evidence and a fix. The
browser env itself holds (envs/browser_env/tests/test_browser_validate.py)."""

from __future__ import annotations

from pathlib import Path

from openenv.authoring._hacking import Task
from openenv.authoring._levels import run_validation
from openenv.authoring._policy import CheckStatus, Level, Verdict
from openenv.authoring._probes_browser import _leaks, page_actions

from ._flawed import make_env

#: A page env in pure Python: its page "runs" a javascript: URL calling the scoring
#: function, reads its score from whatever page the agent navigated to (a data: page
#: setting the globals), runs markup typed into its text box, and shows its score state.
FORGEABLE_PAGE = """\
import uuid
from typing import Annotated, Literal
from pydantic import Field, RootModel
from openenv import Action, Environment, Execution, Observation, State


class Click(Action):
    type: Literal["click"] = "click"
    id: int


class Fill(Action):
    type: Literal["fill"] = "fill"
    id: int
    text: str


class Goto(Action):
    type: Literal["goto"] = "goto"
    url: str


class Noop(Action):
    type: Literal["noop"] = "noop"


class PageAction(RootModel[Annotated[Click | Fill | Goto | Noop, Field(discriminator="type")]]):
    pass


class PageObservation(Observation):
    text: str = ""
    goal: str = ""
    url: str = ""


class Env(Environment[PageAction, PageObservation, State]):
    execution = Execution.INLINE

    def __init__(self) -> None:
        self._state, self._done, self._typed = State(), False, ""

    def _page(self, reward: float = 0.0, done: bool = False) -> PageObservation:
        self._done = done
        text = '[1] textbox ""\\n[2] button "Submit"\\n[3] text "last reward: 0"'
        return PageObservation(text=text, goal='Type "blue" and press Submit.', url="http://page.test/t.html",
                               reward=reward, done=done)

    def reset(self, *, seed=None, episode_id=None, options=None) -> PageObservation:
        self._state, self._typed = State(episode_id=episode_id or uuid.uuid4().hex), ""
        return self._page()

    def step(self, action: PageAction) -> PageObservation:
        self._state.step_count += 1
        act = action.root if isinstance(action, PageAction) else action
        if isinstance(act, Goto) and ("endEpisode(1" in act.url or "WOB_DONE_GLOBAL" in act.url):
            return self._page(1.0, True)
        if isinstance(act, Fill):
            self._typed = act.text
            if "<script>" in act.text:  # typed markup runs, and it scores
                return self._page(1.0, True)
        if isinstance(act, Click) and act.id == 2:
            return self._page(1.0 if self._typed == "blue" else 0.0, True)
        return self._page(0.0, self._state.step_count >= 10)

    def state(self) -> State:
        return self._state.model_copy()
"""


def test_the_page_probes_catch_each_flaw(tmp_path: Path) -> None:
    report = run_validation(
        make_env(tmp_path, FORGEABLE_PAGE), max_level=Level.SEMANTIC, tasks=1, probe_tasks=1
    )
    hacking = report.get("semantic.reward_hacking")
    assert hacking.status is CheckStatus.FAIL, report.render()
    assert (
        hacking.evidence[0] == "3 probe(s) scored above an episode that answers nothing: "
        "data_url, fill_script, javascript_url"
    )
    assert "HACKED: javascript_url on seed-0: reward 1 (no answer 0)" in hacking.evidence
    assert "held: local_url on seed-0: reward 0 (no answer 0)" in hacking.evidence
    assert "refuse navigation" in str(hacking.remediation)
    leakage = report.get("semantic.no_solution_leakage")
    assert leakage.status is CheckStatus.FAIL
    assert "task seed-0, after reset: the observation shows the page's reward state" in leakage.evidence[0]
    assert report.verdict is Verdict.FAIL


def test_what_leaks_before_the_end_of_a_page_episode() -> None:
    task = Task("t", {})
    clean = {"observation": {"text": '[1] button "OK"', "goal": "Click OK.", "metadata": {}}, "reward": 0.0}
    assert _leaks(task, [("reset", clean)]) == []
    scored = {"observation": {"text": "", "metadata": {"expected": "OK"}}, "reward": 1.0, "done": True}
    assert _leaks(task, [("reset", scored)]) == [
        "task t, after reset: the episode is scored before any action (reward 1.0, done True)",
        "task t, after reset: the metadata names the expected answer (expected)",
    ]


def test_only_an_action_union_with_goto_and_url_is_a_page_env() -> None:
    from browser_env.models import BrowserAction
    from echo_env.models import EchoAction

    assert page_actions(BrowserAction.model_json_schema())
    assert not page_actions(EchoAction.model_json_schema())
    assert not page_actions({"oneOf": [{"properties": {"type": {"const": "goto"}}}]})  # no url
