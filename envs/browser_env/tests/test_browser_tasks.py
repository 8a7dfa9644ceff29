"""MiniWoB tasks through a real server and client, in the system's headless Chromium;
and what ``openenv validate --level semantic`` asks of them: the page probes score no
more than an episode that answers nothing and show no reward state before the end, the
shipped canaries end at no reward or below."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from _browser_fixtures import BrowserServer, needs_chromium
from browser_env import (
    MODELS,
    ClickAction,
    FillAction,
    GotoAction,
    HoverAction,
    NoopAction,
    PressAction,
    ScrollAction,
    SelectAction,
)
from browser_env.solutions import SOLUTIONS, find

from openenv import EnvClient, ResetRequired, TaskNotFound, ValidationFailed
from openenv.authoring._checks import Context
from openenv.authoring._hacking import Task
from openenv.authoring._probes_browser import PAGE_PROBES, page_actions, run_page_probes
from openenv.authoring._report import Report
from openenv.authoring._semantic_replay import read_canaries, replay

pytestmark = [needs_chromium, pytest.mark.timeout(120)]

FOLDER = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server() -> Iterator[BrowserServer]:
    srv = BrowserServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def env(server: BrowserServer) -> Iterator[EnvClient]:
    with EnvClient(server.url, MODELS) as client:
        yield client


@pytest.mark.parametrize(("task_id", "seed"), [(t, 1 + i % 2) for i, t in enumerate(sorted(SOLUTIONS))])
def test_scripted_policy_solves_task(env: EnvClient, task_id: str, seed: int) -> None:
    """One seed each here (alternating); tests/eval/test_oracle.py plays each under another."""
    result = env.reset(seed=seed, task_id=task_id)
    obs = result.observation
    assert obs.task_id == task_id
    assert obs.goal
    for action in SOLUTIONS[task_id](obs):
        result = env.step(action)
        assert result.observation.last_action_error is None, result.observation.last_action_error
    assert result.reward == 1.0, (task_id, seed, result.observation.text)
    assert result.terminated


def test_wrong_action_scores_lower(env: EnvClient) -> None:
    obs = env.reset(seed=3, task_id="click-button").observation
    target = SOLUTIONS["click-button"](obs)[0].id
    wrong = next(i for i in find(obs, "button") if i != target)
    result = env.step(ClickAction(id=wrong))
    assert result.terminated
    assert result.reward is not None
    assert result.reward < 1.0
    obs = env.reset(seed=4, task_id="enter-text").observation
    env.step(FillAction(id=find(obs, "textbox")[0], text="certainly not the word"))
    result = env.step(ClickAction(id=find(obs, "button", "Submit")[0]))
    assert result.reward == -1.0


@pytest.mark.parametrize(
    ("reset", "role"),
    [
        ({"seed": 2}, "button"),
        *(({"seed": s, "task_id": "click-button"}, "button") for s in (1, 3, 4)),
        *(({"seed": s, "task_id": "click-link"}, "link") for s in (2, 5)),
    ],
)
def test_instance_not_won_by_a_random_click(env: EnvClient, reset: dict[str, Any], role: str) -> None:
    """Issue 33: ``reset(seed=2)`` drew a click-button page of two buttons, and the
    validator's random policy solved it. Each candidate is clicked on the same instance:
    at most one click in four on a candidate wins (``_tasks.CANDIDATES``)."""
    obs = env.reset(**reset).observation
    candidates = find(obs, role)
    wins = 0
    for candidate in candidates:
        again = env.reset(**reset).observation
        assert (again.text, again.goal) == (obs.text, obs.goal)
        result = env.step(ClickAction(id=candidate))
        assert result.terminated
        wins += result.reward == 1.0
    assert wins >= 1, (reset, obs.text)
    assert 4 * wins <= len(candidates), (reset, wins, obs.text)


def test_same_seed_same_problem_and_ids(env: EnvClient) -> None:
    first = env.reset(seed=11, task_id="click-checkboxes").observation
    again = env.reset(seed=11, task_id="click-checkboxes").observation
    other = env.reset(seed=12, task_id="click-checkboxes").observation
    assert (first.text, first.goal) == (again.text, again.goal)
    assert first.goal != other.goal


def test_task_drawn_from_seed(env: EnvClient) -> None:
    picks = {env.reset(seed=s).observation.task_id for s in range(6)}
    assert len(picks) > 1
    assert env.reset(seed=5).observation.task_id == env.reset(seed=5).observation.task_id
    assert env.state().task_id == env.reset(seed=5).observation.task_id


def test_task_by_index_and_split(env: EnvClient) -> None:
    assert env.reset(index=0, split="all").observation.task_id == "ascending-numbers"
    assert env.reset(index=0).observation.task_id == "choose-list"


def test_unknown_task_and_bad_options_are_typed_errors(env: EnvClient) -> None:
    with pytest.raises(TaskNotFound, match="no MiniWoB task 'click-nothing'"):
        env.reset(task_id="click-nothing")
    with pytest.raises(TaskNotFound):
        env.reset(split="nope")
    with pytest.raises(TaskNotFound):
        env.reset(index=20)
    with pytest.raises(ValidationFailed):
        env.reset(task_id="click-test", max_steps=0)
    with pytest.raises(ValidationFailed):
        env.reset(task_id="click-test", colour="red")


def test_navigation_outside_allowed_origins_is_refused(env: EnvClient) -> None:
    obs = env.reset(seed=1, task_id="click-test").observation
    for url in ("https://example.com/", "file:///etc/passwd", "chrome://version"):
        result = env.step(GotoAction(url=url))
        assert "refused" in (result.observation.last_action_error or "")
        assert result.observation.url == obs.url
        assert not result.done
    same = obs.url.rsplit("/", 1)[0] + "/click-test-2.html"
    result = env.step(GotoAction(url=same))
    assert result.observation.last_action_error is None
    assert result.observation.url == same


def test_element_errors_come_back_as_observations(env: EnvClient) -> None:
    obs = env.reset(seed=1, task_id="click-test").observation
    result = env.step(ClickAction(id=999))
    assert result.observation.last_action_error == "no element [999] in the last observation"
    text = find(obs, "text")[0]
    result = env.step(SelectAction(id=text, option="x"))
    assert "is not a <select>" in (result.observation.last_action_error or "")
    assert not result.done


def test_other_actions_and_screenshot(env: EnvClient) -> None:
    obs = env.reset(seed=2, task_id="choose-list", screenshot=True).observation
    assert obs.screenshot is not None
    assert obs.screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    box = find(obs, "combobox")[0]
    for action in (
        HoverAction(id=box),
        ScrollAction(dy=40),
        ScrollAction(id=box, dy=10),
        PressAction(key="Tab"),
        NoopAction(wait_ms=10),
    ):
        result = env.step(action)
        assert result.observation.last_action_error is None, (action, result.observation.last_action_error)
        assert result.observation.screenshot is not None
    assert env.state().step_count == 5


def test_max_steps_truncates(env: EnvClient) -> None:
    env.reset(seed=1, task_id="click-test", max_steps=2)
    assert not env.step(NoopAction()).done
    result = env.step(NoopAction())
    assert result.truncated
    assert not result.terminated
    with pytest.raises(ResetRequired):  # the server holds the episode over
        env.step(NoopAction())


def test_schema_lists_every_action_kind(server: BrowserServer) -> None:
    schema = httpx.get(server.url + "/schema", timeout=10).json()
    text = str(schema["action"])
    for kind in ("click", "fill", "press", "select", "scroll", "hover", "goto", "noop"):
        assert f"'{kind}'" in text


def _validator(server: BrowserServer) -> Context:
    return Context(
        url=server.url, report=Report(server.url), timeout_s=30.0, metadata={"name": "browser_env"}
    )


def test_page_probes_score_no_more_than_no_answer(server: BrowserServer) -> None:
    ctx = _validator(server)
    assert page_actions(ctx.get("/schema")["action"])
    tasks = [Task("enter-text", {"task_id": "enter-text", "seed": 1})]  # a text box, and buttons
    found = run_page_probes(ctx, tasks)
    assert sorted({p.probe for p in found.probes}) == sorted(PAGE_PROBES)
    assert len(found.probes) == len(PAGE_PROBES) * len(tasks)
    assert [p for p in found.probes if p.hacked or p.note] == []
    assert all(p.honest == 0.0 for p in found.probes)  # no answer: the episode goes on, 0
    # typed script went in and was submitted as the answer: a wrong answer, not a forged one
    assert [p.reward for p in found.probes if (p.task, p.probe) == ("enter-text", "fill_script")] == [-1.0]
    assert found.leaks == []
    assert found.observations > 2 * len(PAGE_PROBES)


def test_shipped_canaries_end_at_no_reward_or_below(server: BrowserServer) -> None:
    canaries = read_canaries(FOLDER / "canaries.jsonl")
    assert len(canaries) >= 5
    with ThreadPoolExecutor(4) as pool:  # the validator replays them one by one; here, 4 at once
        played = pool.map(lambda c: (c[0], replay(_validator(server), c[1], c[2])), canaries)
        rewards = dict(played)
    assert {n: r for n, r in rewards.items() if r > 0.0} == {}, rewards
    assert min(rewards.values()) == -1.0  # some are wrong answers the task itself scores -1
