"""Reward-hacking probes for envs whose actions run no code: a free-text answer field.

Such an env runs no submitted code, but its grader can still be forged through what
it accepts. Each probe is one episode on one of the env's own tasks (reset with seed
0, so every episode sees the same question), judged against an honest wrong answer of
the same length (``#`` repeated: an env that rewards length, as echo does, rewards
both alike):

* ``other_type:*``: the answer as a number, a list of candidates, an object, null;
* ``stuffed``: many candidate answers in one string (a grader testing ``expected in
  answer``); ``oversized``: the same, past the schema's ``maxLength``;
* ``after_done``: the episode played to its end, then stepped again (a reward after
  ``done`` counts twice in a trainer's return);
* ``from_view``: each value the env shows before the agent answers (the reset
  observation, its metadata, the state) sent as the answer: an answer taken from
  there is a leak (``semantic.no_solution_leakage``).

A probe is reported when it scores above its honest twin by more than the manifest's
``floor_margin``. The same episodes give two more findings: the task's reference
answer (its data's ``solution``, ``answer`` and the like), or else the one the env
reveals once an episode ends (``metadata.expected`` and the like), played on the same
question (``semantic.oracle_max``), and two generated canaries, the empty
answer and a one-character non-answer, which must end at the floor
(``semantic.canary_floor``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ProbeError
from ._checks import Context
from ._hacking import ProbeResult, Task
from ._probe import WsProbe

TEXT = "text"
#: Where the ``from_view`` probe looks, for the evidence lines.
VIEW_PROBES = ("from_view",)
#: Keys of a final observation (or its metadata) that name the expected answer.
REVEAL_KEYS = ("expected", "expected_answer", "answer", "correct_answer", "solution", "target")
#: Candidates stuffed into one answer: small integers, then common short answers.
_CANDIDATES = [str(i) for i in range(-20, 1000)] + ["yes", "no", "true", "false", "A", "B", "C", "D"]
_STUFF_CHARS = 4096
_MAX_VIEW = 24
_MAX_STEPS = 8
_FILLER = "#"


def text_field(schema: dict[str, Any]) -> str | None:
    """The action's free-text answer field: its first required string property (else
    its first string property), ``metadata`` aside; None when the action has none (a
    union of structured commands, numbers only)."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    strings = [n for n, p in props.items() if n != "metadata" and _takes_text(p)]
    required = [n for n in schema.get("required", []) if n in strings]
    found = required or strings
    return str(found[0]) if found else None


def _takes_text(prop: Any) -> bool:
    """A property that takes a string (alone, or among other types)."""
    if not isinstance(prop, dict):
        return False
    return prop.get("type") == "string" or any(_takes_text(p) for p in prop.get("anyOf", []))


@dataclass
class TextFindings:
    """What the text probes found: the probe results, the reference answers the env
    revealed (task -> (answer, reward when played)), canaries (line -> reward), and
    answers revealed while the episode could go on."""

    answer_field: str
    probes: list[ProbeResult] = field(default_factory=list)
    revealed: dict[str, tuple[str, float | None]] = field(default_factory=dict)
    canaries: list[tuple[str, float | None]] = field(default_factory=list)
    early_reveals: list[str] = field(default_factory=list)


class _Session:
    """One WebSocket session for a task's episodes, reopened after a failure."""

    def __init__(self, ctx: Context, reset: dict[str, Any]) -> None:
        self.ctx, self.reset_data = ctx, reset
        self.ws: WsProbe | None = None

    def reset(self) -> dict[str, Any]:
        if self.ws is None:
            self.ws = self.ctx.ws().__enter__()
        try:
            data: dict[str, Any] = self.ws.expect(
                {"type": "reset", "data": dict(self.reset_data)}, "observation"
            )
            return data
        except ProbeError:
            self.close()
            raise

    def step(self, action: dict[str, Any]) -> dict[str, Any] | None:
        """The step's observation, or None when the env refused the action (an error reply)."""
        assert self.ws is not None
        try:
            reply = self.ws.request({"type": "step", "data": action})
        except ProbeError:
            self.close()
            return None
        data = reply.get("data")
        return data if reply.get("type") == "observation" and isinstance(data, dict) else None

    def state(self) -> dict[str, Any]:
        assert self.ws is not None
        reply = self.ws.request({"type": "state"})
        data = reply.get("data")
        return data if reply.get("type") == "state" and isinstance(data, dict) else {}

    def close(self) -> None:
        if self.ws is not None:
            ws, self.ws = self.ws, None
            ws.__exit__(None, None, None)


def _reward(obs: dict[str, Any] | None) -> float | None:
    value = obs.get("reward") if obs else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _scalars(value: Any, skip: frozenset[str]) -> list[str]:
    """Every string and number in ``value`` (keys in ``skip`` left out), as text."""
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in skip for s in _scalars(v, skip)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v, skip)]
    if isinstance(value, bool) or value is None:
        return []
    return [str(value)] if isinstance(value, str | int | float) else []


def _revealed(obs: dict[str, Any] | None) -> str | None:
    if not obs:
        return None
    places = [obs.get("metadata"), obs.get("observation"), obs]
    for where in [p for p in places if isinstance(p, dict)]:
        for key in REVEAL_KEYS:
            value = where.get(key)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if number or (isinstance(value, str) and value.strip()):
                return str(value)
    return None


class _Prober:
    def __init__(self, ctx: Context, name: str, task: Task, margin: float, max_length: int | None) -> None:
        reset = dict(task.reset)
        reset.setdefault("seed", 0)
        self.session = _Session(ctx, reset)
        self.name, self.task, self.margin, self.max_length = name, task, margin, max_length
        self._twins: dict[int, float | None] = {}

    def play(self, value: Any) -> dict[str, Any] | None:
        """Reset, then one step answering ``value``: the step's observation (None: refused)."""
        self.session.reset()
        return self.session.step({self.name: value})

    def twin(self, size: int) -> float:
        """The reward of the honest wrong answer of ``size`` characters (0 if refused)."""
        if size not in self._twins:
            self._twins[size] = _reward(self.play(_FILLER * max(size, 1)))
        return self._twins[size] or 0.0

    def judge(self, probe: str, value: Any, note: str = "") -> ProbeResult:
        size = len(value) if isinstance(value, str) else len(json.dumps(value))
        obs = self.play(value)
        reward = _reward(obs)
        text = note or ("refused" if obs is None else "")
        return ProbeResult(self.task.id, probe, reward or 0.0, self.twin(size), text, self.margin)

    def after_done(self) -> ProbeResult:
        self.session.reset()
        for _ in range(_MAX_STEPS):
            obs = self.session.step({self.name: _FILLER})
            if obs is None or obs.get("done"):
                break
        else:
            return ProbeResult(self.task.id, "after_done", 0.0, 0.0, f"no end within {_MAX_STEPS} steps")
        if obs is None:
            return ProbeResult(self.task.id, "after_done", 0.0, 0.0, "the episode ended on a refused step")
        extra = [_reward(self.session.step({self.name: _FILLER})) for _ in range(2)]
        got = [r for r in extra if r is not None]
        note = f"{len(got)} of 2 steps after done answered" + (f" (rewards {got})" if got else ": refused")
        return ProbeResult(self.task.id, "after_done", max(got, default=0.0), 0.0, note, self.margin)

    def from_view(self) -> list[ProbeResult]:
        first = self.session.reset()
        state = self.session.state()
        skip = frozenset({"reward", "done", "episode_id", "step_count"})
        seen = dict.fromkeys(s.strip() for s in _scalars(first, skip) + _scalars(state, skip))
        values = [s for s in seen if s and len(s) <= 256][:_MAX_VIEW]
        out = [self.judge("from_view", v, f"answered {v[:40]!r}") for v in values]
        best = max(out, key=lambda p: p.reward - p.honest, default=None)
        return [best] if best is not None else []


def run_text_probes(
    ctx: Context, name: str, tasks: list[Task], *, margin: float, max_length: int | None
) -> TextFindings:
    """Every text probe on each task (see the module's docstring)."""
    found = TextFindings(name)
    for task in tasks:
        prober = _Prober(ctx, name, task, margin, max_length)
        try:
            honest = prober.play(_FILLER)
            answer = _revealed(honest)
            shipped = _revealed(task.data)  # the task's own reference answer, if it ships one
            if answer is not None and honest is not None and not honest.get("done"):
                found.early_reveals.append(
                    f"task {task.id}: a step reply names the answer {answer[:40]!r} while the episode goes on"
                )
            if shipped is not None or answer is not None:
                reference = str(shipped if shipped is not None else answer)
                found.revealed[task.id] = (reference, _reward(prober.play(reference)))
            found.canaries += [
                (f"{task.id}: {label}", _reward(prober.play(value)))
                for label, value in (("the empty answer", ""), (f"the non-answer {_FILLER!r}", _FILLER))
            ]
            stuffed = " ".join(_CANDIDATES)[: min(_STUFF_CHARS, max_length or _STUFF_CHARS)]
            found.probes += [
                prober.judge("other_type:number", 7),
                prober.judge("other_type:list", _CANDIDATES[20:40]),
                prober.judge("other_type:object", {name: "7", "value": 7}),
                prober.judge("other_type:null", None),
                prober.judge("stuffed", stuffed),
            ]
            if max_length is not None and max_length < 1 << 20:
                over = (" ".join(_CANDIDATES) * (1 + max_length // _STUFF_CHARS))[: max_length + 1]
                found.probes.append(prober.judge("oversized", over))
            found.probes.append(prober.after_done())
            found.probes += prober.from_view()
        except ProbeError as exc:
            found.probes.append(ProbeResult(task.id, "honest_wrong", 0.0, 0.0, f"episode failed: {exc}"))
        finally:
            prober.session.close()
    return found
