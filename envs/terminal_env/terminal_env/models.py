"""Terminal env models: data only, importable by clients without the server.

An action is one of eight kinds, told apart by ``type`` (a tagged union); a missing
``type`` means ``run``::

    RunAction(command="ls")                 {"command": "ls"}  or  {"type": "run", "command": "ls"}
    SendKeysAction(keys="q")                {"type": "send_keys", "keys": "q"}
    WriteFileAction(path="a", content="x")  {"type": "write_file", "path": "a", "content": "x"}
    SubmitAction()                          {"type": "submit"}

``TerminalAction`` is what the server parses a step's action into; it also builds any
member from keywords (``TerminalAction(command="ls")``, ``TerminalAction(type="submit")``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, RootModel, StrictBool, model_validator

from openenv import JSON_INTEGER, Action, EnvModels, Observation, State
from openenv.tasks import TaskOptions

#: The member a step's action is parsed as when it carries no ``type``.
DEFAULT_TYPE = "run"

#: strict: a JSON number, never ``true``
Timeout = Annotated[
    float,
    Field(strict=True, ge=0.001, description="seconds (at least 1 ms); capped by the server's max_timeout_s"),
]
FilePath = Annotated[str, Field(min_length=1, max_length=4096, description="relative to the shell's cwd")]
Encoding = Literal["utf-8", "base64"]


def _tag_required(schema: dict[str, Any]) -> None:
    # Only ``run`` may leave ``type`` out, and the JSON Schema says so: a tagless object
    # fits no other member, as the server parses it.
    required = schema.setdefault("required", [])
    if "type" not in required:
        required.insert(0, "type")


class _TerminalAction(Action):
    model_config = ConfigDict(json_schema_extra=_tag_required)

    def model_post_init(self, context: Any, /) -> None:
        # The tag counts as set, so a client's exclude_unset dump still carries it.
        self.__pydantic_fields_set__.add("type")


class RunAction(_TerminalAction):
    """Run a command in the persistent shell and wait for it (the default action).

    Waits at most ``timeout_s`` (default 30 s, capped by the server). Past it: Ctrl-C;
    if the shell does not come back, it is killed and restarted (``session_restarted``).
    """

    model_config = ConfigDict(json_schema_extra=None)

    type: Literal["run"] = "run"
    command: str = Field(max_length=1 << 20, description="a bash command line")
    timeout_s: Timeout | None = None


class SendKeysAction(_TerminalAction):
    """Type keys into the terminal (REPLs, pagers); returns what appears until output pauses.

    ``enter`` adds a newline; ``timeout_s`` (default 1 s) bounds the wait.
    """

    type: Literal["send_keys"] = "send_keys"
    keys: str = Field(max_length=1 << 16)
    enter: StrictBool = False
    timeout_s: Timeout | None = None


class ReadAction(_TerminalAction):
    """Read the output produced since the last action (waits up to ``timeout_s``, default 0.5 s)."""

    type: Literal["read"] = "read"
    timeout_s: Timeout | None = None


class InterruptAction(_TerminalAction):
    """Send Ctrl-C to the foreground command."""

    type: Literal["interrupt"] = "interrupt"


class RestartAction(_TerminalAction):
    """Kill every process of the session and start a fresh shell (files stay)."""

    type: Literal["restart"] = "restart"


#: Padded base64 (RFC 4648), as ``base64.b64decode(..., validate=True)`` takes it.
BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"


def _write_file_schema(schema: dict[str, Any]) -> None:
    _tag_required(schema)
    base64 = {"properties": {"encoding": {"const": "base64"}}, "required": ["encoding"]}
    schema["if"] = base64
    # "not" a newline: Python's "$" (jsonschema, hypothesis) also matches before a final one
    schema["then"] = {"properties": {"content": {"pattern": f"^{BASE64}$", "not": {"pattern": "\n"}}}}


class WriteFileAction(_TerminalAction):
    """Write a file, with no shell quoting involved (``content`` as ``utf-8`` or ``base64``:
    then padded base64, checked here and stated in the JSON Schema)."""

    model_config = ConfigDict(json_schema_extra=_write_file_schema)

    type: Literal["write_file"] = "write_file"
    path: FilePath
    content: str = Field(max_length=16 << 20)
    encoding: Encoding = "utf-8"
    mode: Annotated[int, Field(ge=0, le=0o7777), JSON_INTEGER] | None = Field(
        default=None, description="permission bits, e.g. 420 (0o644)"
    )

    @model_validator(mode="after")
    def _base64_content(self) -> WriteFileAction:
        if self.encoding == "base64" and not re.fullmatch(BASE64, self.content):
            raise ValueError("content is not padded base64 (encoding is base64)")
        return self


class ReadFileAction(_TerminalAction):
    """Read a file (up to 4 MiB), as ``utf-8`` text or ``base64``."""

    type: Literal["read_file"] = "read_file"
    path: FilePath
    encoding: Encoding = "utf-8"


class SubmitAction(_TerminalAction):
    """Run the task's tests; the episode ends with their reward."""

    type: Literal["submit"] = "submit"


AnyTerminalAction = Annotated[
    RunAction
    | SendKeysAction
    | ReadAction
    | InterruptAction
    | RestartAction
    | WriteFileAction
    | ReadFileAction
    | SubmitAction,
    Field(discriminator="type"),
]


class TerminalAction(RootModel[AnyTerminalAction]):
    """What the server parses a step's action into; clients send any one action model."""

    @model_validator(mode="before")
    @classmethod
    def _run_by_default(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" not in data:
            return {"type": DEFAULT_TYPE, **data}
        return data


class TerminalObservation(Observation):
    """What the shell showed, and where it stands.

    ``output`` is ANSI-stripped; past the server's limit its middle is cut and
    ``omitted_bytes`` says how much. ``exit_code`` is None when none could be read
    (still running, killed). ``prompt`` is the text for a model (RFC 0002).
    """

    prompt: str = ""
    output: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    omitted_bytes: int = 0
    cwd: str = ""
    duration_s: float = 0.0
    session_restarted: bool = False
    task_id: str | None = None
    instruction: str = ""


class TerminalState(State):
    """Episode state: the task, the shell's cwd, restarts and the sandbox in force."""

    task_id: str | None = None
    cwd: str = ""
    restarts: int = 0
    submitted: bool = False
    sandbox: dict[str, Any] = Field(default_factory=dict)


class TerminalResetOptions(TaskOptions):
    """Reset options: which task (``task_id``, ``index``, ``split``; else from the seed),
    or ``free_shell`` for a shell with no task (``submit`` then scores 0)."""

    free_shell: StrictBool = False
    max_steps: Annotated[int, Field(ge=1), JSON_INTEGER] | None = None


MODELS = EnvModels(TerminalAction, TerminalObservation, TerminalState)

__all__ = [
    "MODELS", "AnyTerminalAction", "InterruptAction", "ReadAction", "ReadFileAction", "RestartAction",
    "RunAction", "SendKeysAction", "SubmitAction", "TerminalAction", "TerminalObservation",
    "TerminalResetOptions", "TerminalState", "WriteFileAction",
]
