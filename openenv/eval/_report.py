"""``openenv eval report DIR``: one static HTML file, opened from disk, no network.

The page embeds ``results.json`` and the trajectories (turns cut to their first 40, a
text to 2,000 characters) as JSON and draws with inline script: the summary, pass@k
against k (SVG), the per-task table (sortable by any column), a reward histogram
(SVG) and a trajectory browser. Every figure is read from the embedded results, and
each carries a ``data-value`` attribute with the number it shows (tests compare them).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ._runner import RESULTS_FILE, write_results
from ._trajectory import FILE, Trajectory, load_trajectories

_MAX_TURNS, _MAX_TEXT = 40, 2000


def _clip(value: Any) -> Any:
    if isinstance(value, str):
        return (
            value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + f"... [{len(value) - _MAX_TEXT} more]"
        )
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v) for v in value[:200]]
    return value


def _episode(t: Trajectory) -> dict[str, Any]:
    turns = [
        _clip(
            turn.model_dump(
                mode="json",
                include={
                    "index",
                    "observation",
                    "messages",
                    "action",
                    "tool_calls",
                    "reward",
                    "policy_s",
                    "env_s",
                    "parse_error",
                    "warnings",
                },
            )
        )
        for turn in t.turns[:_MAX_TURNS]
    ]
    return {
        "task_id": t.task_id,
        "sample": t.sample,
        "status": t.status,
        "reward": t.reward,
        "passed": t.passed,
        "error": t.error,
        "seed": t.seed,
        "wall_s": t.wall_s,
        "turns": turns,
        "more_turns": max(len(t.turns) - _MAX_TURNS, 0),
        "final_observation": _clip(t.final_observation),
        "reward_breakdown": _clip(t.reward_breakdown),
    }


def _embed(data: Any) -> str:
    # </script> inside a JSON string would end the script element early
    return json.dumps(data, default=str).replace("</", "<\\/")


def write_report(run_dir: str | Path, output: str | Path | None = None) -> Path:
    """Write the report of a run folder; returns its path (default ``DIR/report.html``)."""
    folder = Path(run_dir)
    trajectories = load_trajectories(folder)  # EvalError when the folder holds no run
    results_path = folder / RESULTS_FILE
    results = json.loads(results_path.read_text()) if results_path.is_file() else write_results(folder)
    latest = {t.key: t for t in trajectories}
    episodes = [_episode(t) for t in sorted(latest.values(), key=lambda t: (t.task_id, t.sample))]
    title = f"openenv eval: {results.get('env', '')} / {results.get('policy', '')}"
    page = _TEMPLATE.replace("__TITLE__", html.escape(title))
    page = page.replace("__RESULTS__", _embed(results)).replace("__EPISODES__", _embed(episodes))
    path = Path(output) if output else folder / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


_TEMPLATE = (
    (Path(__file__).with_name("report.html")).read_text(encoding="utf-8")
    if (Path(__file__).with_name("report.html").is_file())
    else ""
)
assert _TEMPLATE, f"the report template is missing next to {__file__} ({FILE})"
