"""Scripted reference solutions of MiniWoB tasks: read the first observation, answer.

Each solution reads what the agent sees (the observation's ``text``, one element a line
as ``[id] role "name"``, and its ``goal``) and returns the actions that solve the task,
so it solves any instance the seed draws. ``reference_plan`` is the env's oracle: the
manifest names it (``validation.capabilities.oracle``), and ``openenv eval --policy
oracle`` and ``openenv validate --level semantic`` play it. A task without a solution
here gets None (the oracle reports it as a task without a reference solution).

    from browser_env.solutions import SOLUTIONS, reference_plan
    actions = SOLUTIONS["click-test"](observation)      # action models
    plan = reference_plan(observation_dict)             # wire dicts, or None
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .models import BrowserObservation, ClickAction, FillAction, PressAction, SelectAction

_LINE = re.compile(r'^\s*\[(\d+)\] (\S+) "((?:[^"\\]|\\.)*)"(.*)$')


def elements(obs: BrowserObservation) -> list[tuple[int, str, str, str]]:
    """``(id, role, name, rest)`` for every line of the observation text."""
    found = []
    for line in obs.text.splitlines():
        m = _LINE.match(line)
        if m:
            found.append((int(m[1]), m[2], m[3].replace('\\"', '"'), m[4]))
    return found


def find(obs: BrowserObservation, role: str, name: str | None = None) -> list[int]:
    """Ids of the elements with this role (and this exact name)."""
    return [i for i, r, n, _ in elements(obs) if r == role and (name is None or n == name)]


def named(obs: BrowserObservation, name: str) -> list[int]:
    """Ids of the elements with this exact name, whatever their role."""
    return [i for i, _, n, _ in elements(obs) if n == name]


def quoted(goal: str) -> list[str]:
    """The quoted strings of an instruction."""
    return re.findall(r'"([^"]*)"', goal)


def _after_label(obs: BrowserObservation, label: str) -> int:
    """The textbox right after the label with this text."""
    items = elements(obs)
    for k, (_, role, name, _) in enumerate(items):
        if role == "label" and name == label:
            return next(i for i, r, _, _ in items[k + 1 :] if r == "textbox")
    raise LookupError(f"no label {label!r}")


def _match(pattern: str, goal: str) -> re.Match[str]:
    m = re.search(pattern, goal)
    if m is None:
        raise LookupError(f"the goal {goal!r} is not the task's instruction")
    return m


def _submit(obs: BrowserObservation) -> ClickAction:
    return ClickAction(id=find(obs, "button", "Submit")[0])


Solution = Callable[[BrowserObservation], list[Any]]


def solve_click_test(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", "Click Me!")[0])]


def solve_click_test_2(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", _match(r"Click button (\w+)\.", obs.goal)[1])[0])]


def solve_click_button(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", quoted(obs.goal)[0])[0])]


def solve_click_link(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "link", quoted(obs.goal)[0])[0])]


def solve_click_dialog(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", "Close")[0])]


def solve_click_dialog_2(obs: BrowserObservation) -> list[Any]:
    wanted = quoted(obs.goal)[0]  # Cancel, OK, or x: the title bar's close button
    return [ClickAction(id=find(obs, "button", "Close" if wanted == "x" else wanted)[0])]


def solve_click_button_sequence(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "button", "ONE")[0]), ClickAction(id=find(obs, "button", "TWO")[0])]


def solve_click_collapsible(obs: BrowserObservation) -> list[Any]:
    header = next(i for i, _, n, _ in elements(obs) if re.fullmatch(r"Section #\d+", n))  # not the tablist
    return [ClickAction(id=header), _submit(obs)]


def solve_click_tab(obs: BrowserObservation) -> list[Any]:
    tab = "Tab #" + _match(r"Click on Tab #(\d)\.", obs.goal)[1]
    return [ClickAction(id=named(obs, tab)[-1])]  # the innermost: the tab's link


def solve_enter_text(obs: BrowserObservation) -> list[Any]:
    return [FillAction(id=find(obs, "textbox")[0], text=quoted(obs.goal)[0]), _submit(obs)]


def solve_enter_text_2(obs: BrowserObservation) -> list[Any]:
    word = quoted(obs.goal)[0]
    text = word.upper() if "upper case" in obs.goal else word.lower()
    return [FillAction(id=find(obs, "textbox")[0], text=text), _submit(obs)]


def solve_enter_password(obs: BrowserObservation) -> list[Any]:
    word = quoted(obs.goal)[0]
    boxes = find(obs, "textbox")
    return [FillAction(id=boxes[0], text=word), FillAction(id=boxes[1], text=word), _submit(obs)]


def solve_login_user(obs: BrowserObservation) -> list[Any]:
    user, password = quoted(obs.goal)[:2]
    return [
        FillAction(id=_after_label(obs, "Username"), text=user),
        FillAction(id=_after_label(obs, "Password"), text=password),
        PressAction(id=_after_label(obs, "Password"), key="Tab"),
        ClickAction(id=find(obs, "button", "Login")[0]),
    ]


def solve_click_checkboxes(obs: BrowserObservation) -> list[Any]:
    wanted_text = _match(r"Select (.*) and click Submit", obs.goal)[1]
    wanted = set() if wanted_text == "nothing" else set(wanted_text.split(", "))
    boxes = [ClickAction(id=i) for i, r, n, _ in elements(obs) if r == "checkbox" and n in wanted]
    return [*boxes, _submit(obs)]


def solve_click_option(obs: BrowserObservation) -> list[Any]:
    option = _match(r"Select (.*) and click Submit", obs.goal)[1]
    return [ClickAction(id=find(obs, "radio", option)[0]), _submit(obs)]


def solve_choose_list(obs: BrowserObservation) -> list[Any]:
    option = _match(r"Select (.*) from the list", obs.goal)[1]
    return [SelectAction(id=find(obs, "combobox")[0], option=option), ClickAction(id=find(obs, "button")[-1])]


def solve_focus_text(obs: BrowserObservation) -> list[Any]:
    return [ClickAction(id=find(obs, "textbox")[0])]


def solve_focus_text_2(obs: BrowserObservation) -> list[Any]:
    nth = int(_match(r"Focus into the (\d)\w\w input textbox", obs.goal)[1])
    return [ClickAction(id=find(obs, "textbox")[nth - 1])]


def solve_use_spinner(obs: BrowserObservation) -> list[Any]:
    number = _match(r"Select (-?\d+) with the spinner", obs.goal)[1]
    spinner = (find(obs, "spinbutton") or find(obs, "textbox"))[0]
    return [FillAction(id=spinner, text=number), _submit(obs)]


#: Task id -> its scripted solution.
SOLUTIONS: dict[str, Solution] = {
    "choose-list": solve_choose_list,
    "click-button": solve_click_button,
    "click-button-sequence": solve_click_button_sequence,
    "click-checkboxes": solve_click_checkboxes,
    "click-collapsible": solve_click_collapsible,
    "click-dialog": solve_click_dialog,
    "click-dialog-2": solve_click_dialog_2,
    "click-link": solve_click_link,
    "click-option": solve_click_option,
    "click-tab": solve_click_tab,
    "click-test": solve_click_test,
    "click-test-2": solve_click_test_2,
    "enter-password": solve_enter_password,
    "enter-text": solve_enter_text,
    "enter-text-2": solve_enter_text_2,
    "focus-text": solve_focus_text,
    "focus-text-2": solve_focus_text_2,
    "login-user": solve_login_user,
    "use-spinner": solve_use_spinner,
}


def reference_plan(observation: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The oracle's plan: the first observation (a wire dict) -> the solution's actions
    as wire dicts, or None for a task without a scripted solution."""
    obs = BrowserObservation(
        text=str(observation.get("text") or ""),
        goal=str(observation.get("goal") or ""),
        task_id=str(observation.get("task_id") or ""),
    )
    solution = SOLUTIONS.get(obs.task_id)
    if solution is None:
        return None
    return [action.model_dump(mode="json", exclude={"metadata"}) for action in solution(obs)]
