"""SEMANTIC checks that play known actions again somewhere else, or play shipped ones.

* ``semantic.verifier_portability``: a second server process of the same package (a
  new process: its own hash seed, temporary folders, worker pool) grades the same
  actions as the first; the rewards must agree. A grader that depends on the process
  it runs in (a random salt drawn at import, set order, a path of its own) differs.
* ``semantic.canary_floor``: the canary trajectories the manifest ships
  (``capabilities.canaries``: a package-relative JSON-lines file, one
  ``{"name", "reset", "actions"}`` object a line: known-bad attempts, each the reset's
  data and the actions to send) are replayed; each must end at the floor
  (``range[0] + floor_margin``, or 0 where the range runs below zero) or below.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any

from .._exceptions import ProbeError
from .._vmanifest import ValidationBlock
from ._checks import Context
from ._play import play
from ._policy import NOT_APPLICABLE, CheckStatus
from ._vreport import Results

#: At most this many canaries are replayed, each for at most this many actions.
MAX_CANARIES, MAX_CANARY_ACTIONS = 200, 100


def served_folder(ctx: Context) -> str | None:
    """What ``openenv serve`` was given for this run (a folder or a name), None for a
    server validated by URL."""
    return ctx.report.target if ctx.served_here else None


class SecondServer:
    """A second ``openenv serve`` of the run's package, started at once in a thread (its
    start overlaps the policies' play), stopped at ``close``; none for a URL target."""

    def __init__(self, ctx: Context) -> None:
        self.target = served_folder(ctx)
        self.url: str | None = None
        self.error: str | None = None
        self._stack = contextlib.ExitStack()
        self._thread: threading.Thread | None = None
        if self.target is not None:
            self._thread = threading.Thread(target=self._start, name="validate-second-server", daemon=True)
            self._thread.start()

    def _start(self) -> None:
        from ._validate import serve_process

        assert self.target is not None
        where = Path(self.target).resolve() if Path(self.target).is_dir() else self.target
        try:
            self.url, _ = self._stack.enter_context(serve_process(where))
        except Exception as exc:  # reported by verifier_portability
            self.error = f"{type(exc).__name__}: {exc}"

    def wait(self) -> str | None:
        """The second server's URL, once it serves; None if it did not (``error`` says why)."""
        if self._thread is not None:
            self._thread.join()
        return self.url

    def close(self) -> None:
        self.wait()
        self._stack.close()

    def __enter__(self) -> SecondServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def verifier_portability(
    second: SecondServer,
    block: ValidationBlock | None,
    first: list[Any],
    policy: str,
    *,
    turns: int,
    timeout_s: float,
    results: Results,
) -> None:
    """``first``: the trajectories of ``policy`` on this server, played again on ``second``."""
    if second.target is None:
        results.add(
            "semantic.verifier_portability",
            CheckStatus.SKIP,
            "the target is a running server: there is no second instance of it to start here "
            "(validate the package folder)",
        )
        return
    results.start()
    ids = tuple(dict.fromkeys(t.task_id for t in first))
    url = second.wait()
    if url is None:
        results.add(
            "semantic.verifier_portability",
            CheckStatus.FAIL,
            f"a second server of the same package did not serve: {str(second.error)[:300]}",
            remediation="the package must serve from a fresh process as it did the first time",
        )
        return
    again = play(url, policy, count=None, ids=ids, max_turns=turns, episode_timeout_s=timeout_s)
    diffs = graded_again(first, again, block, "{first:g} on the first server, {again} on the second")
    results.add(
        "semantic.verifier_portability",
        CheckStatus.FAIL if diffs else CheckStatus.PASS,
        diffs
        or [
            f"{len(first)} {policy} episode(s) graded by a second server process of the same package: "
            "the same rewards"
        ],
        remediation="grade from the task and the actions only: nothing drawn per process (a salt, "
        "set or dict order of strings, a path or pid of its own)",
        measured={"policy": policy, "episodes": len(first)},
    )


def graded_again(first: list[Any], again: list[Any], block: ValidationBlock | None, shown: str) -> list[str]:
    """A line for each episode of ``first`` whose final reward the same (task, sample)
    in ``again`` does not give, within the manifest's ``variance_tolerance``; ``shown``
    formats the two rewards (``{first}``, ``{again}``: None when it was not played)."""
    tol = (block.reward.variance_tolerance or 0.0) if block else 0.0
    there = {(t.task_id, t.sample): t.reward for t in again}
    return [
        f"{t.task_id}: " + shown.format(first=t.reward, again=there.get((t.task_id, t.sample)))
        for t in first
        if there.get((t.task_id, t.sample)) is None or abs(t.reward - there[(t.task_id, t.sample)]) > tol
    ]


def canary_floor(
    ctx: Context,
    block: ValidationBlock | None,
    results: Results,
    generated: list[tuple[str, float | None]] | None = None,
) -> None:
    """Replay the declared canaries; each must end at the floor or below. With none
    declared, the ``generated`` ones (name, reward; None: refused) are judged instead."""
    declared = block.capabilities.canaries if block is not None else None
    if block is not None and not declared and generated:
        _judge_canaries(block, generated, "generated", "the env's grader", results)
        return
    if block is None or not declared:
        results.add(
            "semantic.canary_floor",
            CheckStatus.SKIP,
            NOT_APPLICABLE + "no capabilities.canaries declared (no canary trajectories shipped), and the "
            "action takes no free-text answer to generate one",
        )
        return
    target = served_folder(ctx)
    folder = Path(target).resolve() if target is not None and Path(target).is_dir() else None
    if folder is None:
        results.add(
            "semantic.canary_floor",
            CheckStatus.SKIP,
            f"capabilities.canaries ({declared}) is a file of the package: validate the package folder",
        )
        return
    fix = "ship canaries as JSON lines of {name, reset, actions} (docs/validate.md)"
    try:
        canaries = read_canaries(folder / declared)
    except ProbeError as exc:
        results.add("semantic.canary_floor", CheckStatus.FAIL, str(exc), remediation=fix)
        return
    results.start()
    played: list[tuple[str, float | None]] = []
    for name, reset, actions in canaries:
        try:
            played.append((name, replay(ctx, reset, actions)))
        except ProbeError as exc:
            played.append((f"{name} (the replay failed: {str(exc)[:160]})", float("inf")))
    _judge_canaries(block, played, "declared", "(or, if the canary is wrong, fix " + declared + ")", results)


def canary_ceiling(block: ValidationBlock) -> float:
    """The most a canary may score: ``range[0] + floor_margin``; where the range runs below
    zero (a penalty for a wrong answer, as MiniWoB's -1), no reward (0): an attempt that
    answers nothing gets that, and a known-bad one must not get more."""
    low = block.reward.range[0] + block.reward.floor_margin
    return max(low, 0.0) if block.reward.range[0] < 0.0 <= block.reward.range[1] else low


def _judge_canaries(
    block: ValidationBlock, played: list[tuple[str, float | None]], how: str, fix: str, results: Results
) -> None:
    """Each canary's reward (None: the env refused it, which holds) at the floor or below."""
    floor = canary_ceiling(block)
    lines: list[str] = []
    over: list[str] = []
    for name, reward in played:
        shown = "refused" if reward is None else f"reward {reward:g}"
        (over if reward is not None and reward > floor + 1e-9 else lines).append(
            f"canary {name}: {shown} (floor {floor:g})"
        )
    results.add(
        "semantic.canary_floor",
        CheckStatus.FAIL if over else CheckStatus.PASS,
        over + lines
        if over
        else [f"{len(lines)} {how} canaries ended at or below the floor {floor:g}", *lines],
        remediation="a canary is an attempt that must not be rewarded: make the grader refuse it " + fix,
        measured={"floor": floor, "canaries": len(played)},
    )


def read_canaries(path: Path) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(name, reset data, actions) per line; ``ProbeError`` naming the line that is wrong."""
    if not path.is_file():
        raise ProbeError(f"capabilities.canaries: {path.name} is not a file of the package")
    out = []
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except ValueError as exc:
            raise ProbeError(f"{path.name} line {n}: not JSON ({exc})") from None
        reset, actions = (row.get("reset", {}), row.get("actions")) if isinstance(row, dict) else ({}, None)
        if not isinstance(reset, dict) or not isinstance(actions, list) or not actions:
            raise ProbeError(
                f"{path.name} line {n}: needs 'actions' (a non-empty list) and 'reset' (an object)"
            )
        if not all(isinstance(a, dict) for a in actions) or len(actions) > MAX_CANARY_ACTIONS:
            raise ProbeError(f"{path.name} line {n}: 'actions' must be up to {MAX_CANARY_ACTIONS} objects")
        out.append((str(row.get("name", f"line {n}")), reset, actions))
    if not out or len(out) > MAX_CANARIES:
        raise ProbeError(f"{path.name}: between 1 and {MAX_CANARIES} canaries, found {len(out)}")
    return out


def replay(ctx: Context, reset: dict[str, Any], actions: list[dict[str, Any]]) -> float:
    """One episode of ``actions`` after a reset with ``reset``: the last reward given."""
    reward: Any = 0.0
    with ctx.ws() as ws:
        ws.expect({"type": "reset", "data": dict(reset)}, "observation")
        for action in actions:
            data = ws.expect({"type": "step", "data": action}, "observation")
            reward = data.get("reward") if data.get("reward") is not None else reward
            if data.get("done"):
                break
    return float(reward) if isinstance(reward, int | float) else 0.0
