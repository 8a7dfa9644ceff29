"""Terminal env models: data only, importable by clients without the server."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from openenv import Action, EnvModels, Observation, State
from openenv.tasks import TaskOptions

ActionType = Literal["run", "send_keys", "read", "interrupt", "restart", "write_file", "read_file", "submit"]

#: Which fields each action type needs (others must be left unset).
_NEEDS: dict[str, tuple[str, ...]] = {
    "run": ("command",),
    "send_keys": ("keys",),
    "write_file": ("path", "content"),
    "read_file": ("path",),
}
_ALLOWED: dict[str, set[str]] = {
    "run": {"command", "timeout_s"},
    "send_keys": {"keys", "enter", "timeout_s"},
    "read": {"timeout_s"},
    "interrupt": set(),
    "restart": set(),
    "write_file": {"path", "content", "encoding", "mode"},
    "read_file": {"path", "encoding"},
    "submit": set(),
}
_OPTIONAL = {"command", "keys", "timeout_s", "path", "content", "mode"}


class TerminalAction(Action):
    """One action, tagged by ``type`` (default ``run``: ``{"command": "ls"}`` runs ``ls``).

    - ``run``: ``command`` in the persistent shell; waits for it, at most ``timeout_s``
      (capped by the server). Past it: Ctrl-C; if the shell does not come back, it is
      killed and restarted (``session_restarted``).
    - ``send_keys``: type ``keys`` (plus Enter if ``enter``) for REPLs and pagers;
      returns what appears within ``timeout_s`` (default 1 s).
    - ``read``: output produced since the last action (waits up to ``timeout_s``).
    - ``interrupt``: Ctrl-C. ``restart``: a fresh shell (files stay; jobs, cwd and
      variables go).
    - ``write_file`` / ``read_file``: ``path`` (relative to the shell's cwd) with
      ``content`` as ``encoding`` (``utf-8`` or ``base64``); no shell quoting involved.
    - ``submit``: run the task's tests; the episode ends with their reward.
    """

    type: ActionType = "run"
    command: str | None = Field(default=None, max_length=1 << 20)
    keys: str | None = Field(default=None, max_length=1 << 16)
    enter: bool = False
    timeout_s: float | None = Field(default=None, gt=0)
    path: str | None = Field(default=None, min_length=1, max_length=4096)
    content: str | None = Field(default=None, max_length=16 << 20)
    encoding: Literal["utf-8", "base64"] = "utf-8"
    mode: int | None = Field(default=None, ge=0, le=0o7777)

    @model_validator(mode="after")
    def _fields_fit_type(self) -> TerminalAction:
        missing = [name for name in _NEEDS.get(self.type, ()) if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.type!r} action needs {', '.join(missing)}")
        extra = [n for n in _OPTIONAL - _ALLOWED[self.type] if getattr(self, n) is not None]
        if extra:
            raise ValueError(f"a {self.type!r} action takes no {', '.join(sorted(extra))}")
        return self


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

    free_shell: bool = False
    max_steps: int | None = Field(default=None, ge=1)


MODELS = EnvModels(TerminalAction, TerminalObservation, TerminalState)
