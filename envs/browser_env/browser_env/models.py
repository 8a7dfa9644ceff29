"""Browser env models: data only, importable by clients without the server.

An action is one of eight kinds, told apart by ``type`` (a tagged union)::

    ClickAction(id=13)                  {"type": "click", "id": 13}
    FillAction(id=7, text="hello")      {"type": "fill", "id": 7, "text": "hello"}
    PressAction(key="Enter")            {"type": "press", "key": "Enter"}
    GotoAction(url="http://...")        {"type": "goto", "url": "http://..."}

``id`` is an element id shown in the observation's ``text`` as ``[13]``; an element
keeps its id for as long as it stays on the page.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel, StrictBool

from openenv import JSON_INTEGER, Action, EnvModels, Observation, State
from openenv.tasks import TaskOptions

ElementId = Annotated[
    int, Field(ge=1, description="an element id shown as [id] in the observation"), JSON_INTEGER
]
#: A number as JSON Schema means it: ``1`` or ``1.5``, never ``true``.
Number = Annotated[float, Field(strict=True)]


def _tag_required(schema: dict[str, Any]) -> None:
    # The server parses an action by its ``type`` tag, and the JSON Schema says so: a
    # tagless object fits no member (the Python models still default it).
    required = schema.setdefault("required", [])
    if "type" not in required:
        required.insert(0, "type")


class _BrowserAction(Action):
    model_config = ConfigDict(json_schema_extra=_tag_required)

    def model_post_init(self, context: Any, /) -> None:
        # The tag counts as set, so a client's exclude_unset dump still carries it.
        self.__pydantic_fields_set__.add("type")


class ClickAction(_BrowserAction):
    """Click an element."""

    type: Literal["click"] = "click"
    id: ElementId


class FillAction(_BrowserAction):
    """Replace the text of an input, textarea or contenteditable element."""

    type: Literal["fill"] = "fill"
    id: ElementId
    text: str = Field(max_length=10_000)


class PressAction(_BrowserAction):
    """Press a key or chord (``Enter``, ``Control+A``) on an element, or on the page."""

    type: Literal["press"] = "press"
    key: str = Field(min_length=1, max_length=64)
    id: ElementId | None = None


class SelectAction(_BrowserAction):
    """Choose an option of a ``<select>`` by its value or its label."""

    type: Literal["select"] = "select"
    id: ElementId
    option: str = Field(max_length=1000)


class ScrollAction(_BrowserAction):
    """Scroll an element (or the page) by ``dx``, ``dy`` pixels."""

    type: Literal["scroll"] = "scroll"
    id: ElementId | None = None
    dx: Annotated[int, Field(ge=-100_000, le=100_000), JSON_INTEGER] = 0
    dy: Annotated[int, Field(ge=-100_000, le=100_000), JSON_INTEGER] = 0


class HoverAction(_BrowserAction):
    """Move the mouse over an element."""

    type: Literal["hover"] = "hover"
    id: ElementId


class GotoAction(_BrowserAction):
    """Navigate to a URL; only the env's allowed origins are reachable."""

    type: Literal["goto"] = "goto"
    url: str = Field(min_length=1, max_length=2048)


class NoopAction(_BrowserAction):
    """Do nothing (optionally wait ``wait_ms`` first), then observe."""

    type: Literal["noop"] = "noop"
    wait_ms: Annotated[int, Field(ge=0, le=10_000), JSON_INTEGER] = 0


AnyBrowserAction = Annotated[
    ClickAction
    | FillAction
    | PressAction
    | SelectAction
    | ScrollAction
    | HoverAction
    | GotoAction
    | NoopAction,
    Field(discriminator="type"),
]


class BrowserAction(RootModel[AnyBrowserAction]):
    """What the server parses a step's action into; clients send any one action model."""


class BrowserObservation(Observation):
    """What the agent sees after reset and after each action."""

    text: str = Field(
        default="", description="accessibility tree, one element a line as '[id] role \"name\"'"
    )
    goal: str = Field(default="", description="the task's instruction")
    url: str = ""
    title: str = ""
    task_id: str = ""
    last_action_error: str | None = None
    screenshot: bytes | None = Field(default=None, description="PNG; only when the reset asked for it")


class BrowserState(State):
    """Episode state: the task, its seed, and the reward so far."""

    task_id: str = ""
    seed: int | None = None
    url: str = ""
    total_reward: float = 0.0


def _task_choices(schema: dict[str, Any]) -> None:
    """The tasks this install serves, in the schema (the OpenAPI document, ``/schema``):
    a ``task_id`` of a MiniWoB page (``split`` and ``index`` then unread), else a
    ``split`` and an ``index`` within it. Without the ``miniwob`` wheel, left out."""
    from . import _tasks  # no Playwright: the wheel's page files only

    try:
        ids = sorted(_tasks.task_ids())
    except FileNotFoundError:
        return
    null = {"type": "null"}
    sizes = {name: len(_tasks.split(name)) for name in ("default", "all")}

    def index(n: int) -> dict[str, Any]:
        return {"anyOf": [{"type": "integer", "minimum": 0, "maximum": n - 1}, null]}

    schema["anyOf"] = [
        {"required": ["task_id"], "properties": {"task_id": {"enum": ids}}},
        *(
            {"required": ["split"], "properties": {"task_id": null, "split": {"const": s}, "index": index(n)}}
            for s, n in sizes.items()
        ),
        {"properties": {"task_id": null, "split": null, "index": index(sizes["default"])}},
    ]


class BrowserResetOptions(TaskOptions):
    """Options a client may pass to ``reset`` besides ``seed`` and ``episode_id``.

    The task: ``task_id`` (any MiniWoB page, e.g. ``click-test``) wins over ``index``
    (into ``split``: ``"default"``, the tasks element actions can solve, or ``"all"``);
    without either, it is drawn from the seed out of ``split``. The JSON Schema names
    the tasks and bounds the index (``_task_choices``).
    """

    model_config = ConfigDict(json_schema_extra=_task_choices)

    max_steps: Annotated[int, Field(ge=1, le=10_000), JSON_INTEGER] = 50
    screenshot: StrictBool = Field(default=False, description="attach a PNG screenshot to every observation")
    time_limit_s: Annotated[Number, Field(gt=0, le=86_400)] = Field(
        default=600.0, description="the task's own clock (MiniWoB ends the episode after it)"
    )


MODELS = EnvModels(BrowserAction, BrowserObservation, BrowserState)
