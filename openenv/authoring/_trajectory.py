"""``runtime.trajectory_record``: one seeded episode recorded as JSON lines, read back.

A trainer or a replay keeps an episode as a record of what was sent and seen. The
check plays one episode, writes each exchange as a line of strict JSON (no NaN or
Infinity), reads the file back and asks of the record: every line parses to what was
seen, every step line carries its action, observation, ``reward`` and ``done``, and the
env's own ``state`` agrees with it (``step_count`` equal to the lines of steps).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .._exceptions import ProbeError
from .._vmanifest import ValidationBlock
from ._checks import Context
from ._policy import CheckStatus
from ._vreport import Results


def _play(ctx: Context) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with ctx.ws() as ws:
        first = ws.expect({"type": "reset", "data": {"seed": 0}}, "observation")
        rows.append({"kind": "reset", "seed": 0, "observation": first})
        done = bool(first.get("done"))
        while not done and len(rows) <= min(ctx.max_steps, 3):
            action = ctx.action(len(rows) - 1)
            seen = ws.expect({"type": "step", "data": action}, "observation")
            rows.append({"kind": "step", "action": action, "observation": seen})
            done = bool(seen.get("done"))
        state = ws.expect({"type": "state"}, "state")
    return rows, state


def _problems(rows: list[dict[str, Any]], back: list[Any], state: dict[str, Any]) -> list[str]:
    problems = []
    if back != rows:
        problems.append("the record read back differs from the exchanges it recorded")
    for i, row in enumerate(rows):
        obs = row["observation"]
        if row["kind"] == "step" and not ("reward" in obs and "done" in obs):
            missing = [k for k in ("reward", "done") if k not in obs]
            problems.append(f"step {i}: the observation has no {', '.join(missing)} to record")
    steps = sum(1 for row in rows if row["kind"] == "step")
    if "step_count" in state and state["step_count"] != steps:
        problems.append(f"state.step_count is {state['step_count']}, the record holds {steps} step(s)")
    return problems


def record_trajectory(ctx: Context, block: ValidationBlock | None, results: Results) -> None:
    del block  # the range is runtime.reward_well_formed's
    results.start()
    try:
        rows, state = _play(ctx)
    except ProbeError as exc:
        results.add(
            "runtime.trajectory_record",
            CheckStatus.FAIL,
            f"the episode to record failed: {exc}",
            remediation="let a seeded episode of the given actions run to its end",
        )
        return
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="openenv-trajectory-") as tmp:
        path = Path(tmp) / "trajectory.jsonl"
        try:
            path.write_text("".join(json.dumps(row, allow_nan=False) + "\n" for row in rows))
            back = [json.loads(line) for line in path.read_text().splitlines()]
        except ValueError as exc:  # NaN or Infinity: not JSON
            problems.append(f"an exchange is not strict JSON: {exc}")
            back = []
        size = path.stat().st_size if path.exists() else 0
    if not problems:
        problems = _problems(rows, back, state)
    steps = len(rows) - 1
    done = f"reset (seed 0) and {steps} step(s) recorded as {len(rows)} JSON lines ({size} bytes)"
    results.add(
        "runtime.trajectory_record",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [done + "; read back equal"],
        remediation="keep observations strict JSON with reward and done on every step, "
        "and state.step_count equal to the steps taken",
        measured={"lines": len(rows), "bytes": size},
    )
