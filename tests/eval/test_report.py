"""``openenv eval report``: one static page, checked in real headless Chromium (Debian's
/usr/bin/chromium through Playwright): it loads from disk with no network request and
no console error, and every figure it draws equals ``results.json``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.eval import EvalConfig, run_eval

from .._chromium import headless_chromium
from ._policies import echo_run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    echo_run(out, "random?max_chars=14", count=6, samples=3, max_turns=2, concurrency=4)
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "eval", "report", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out / "report.html")
    return out


@pytest.fixture(scope="module")
def browser():
    with headless_chromium() as chromium:
        yield chromium


def _histogram(rewards: list[float], bins: int = 10) -> list[int]:
    """The counts the report's histogram should draw: equal bins from the lowest reward
    to the highest (a range of 1 around a single value), the highest in the last bin."""
    lo, hi = min(rewards), max(rewards)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    counts = [0] * bins
    for r in rewards:
        counts[min(bins - 1, math.floor((r - lo) / (hi - lo) * bins))] += 1
    return counts


def _open(browser, path: Path):
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on(
        "request",
        lambda r: None if r.url.startswith(("file://", "data:", "about:")) else problems.append(r.url),
    )
    page.goto(path.as_uri())
    page.wait_for_selector("#tasks tbody tr")
    return page, problems


def test_report_opens_offline_without_errors_and_shows_the_results(run_dir: Path, browser) -> None:
    results = json.loads((run_dir / "results.json").read_text())
    page, problems = _open(browser, run_dir / "report.html")
    try:
        cards = {
            e.get_attribute("data-metric"): float(e.get_attribute("data-value"))
            for e in page.query_selector_all("[data-metric]")
        }
        assert cards["tasks"] == results["tasks"] == 6
        assert cards["episodes"] == results["episodes"] == 18
        assert cards["parse failures"] == results["parse_failures"] == 0
        assert cards["warnings"] == results["warnings"] == 0
        assert cards["mean reward"] == pytest.approx(results["mean_reward"])
        assert cards["CI95 low"] == pytest.approx(results["reward_ci95"][0])
        assert cards["CI95 high"] == pytest.approx(results["reward_ci95"][1])
        for k, value in results["pass_at_k"].items():
            assert cards[f"pass@{k}"] == pytest.approx(value)
        # what the reader sees: each card's text is its figure, rounded as shown
        figures = {
            "tasks": (results["tasks"], 0),
            "episodes": (results["episodes"], 0),
            "errors": (results["errors"], 0),
            "mean reward": (results["mean_reward"], 3),
            "CI95 low": (results["reward_ci95"][0], 3),
            "CI95 high": (results["reward_ci95"][1], 3),
            "policy time (s)": (results["policy_s"], 2),
            "env time (s)": (results["env_s"], 2),
            **{f"pass@{k}": (v, 3) for k, v in results["pass_at_k"].items()},
        }
        seen = {
            e.get_attribute("data-metric"): e.query_selector("b").inner_text()
            for e in page.query_selector_all("[data-metric]")
        }
        for name, (value, digits) in figures.items():
            assert "." in seen[name] if digits else seen[name].isdigit(), (name, seen[name])
            assert float(seen[name]) == pytest.approx(value, abs=0.5 * 10**-digits + 1e-9), name
        points = {
            int(e.get_attribute("data-k")): float(e.get_attribute("data-value"))
            for e in page.query_selector_all("#passk circle.point")
        }
        assert points == pytest.approx({int(k): v for k, v in results["pass_at_k"].items()})
        bars = [int(e.get_attribute("data-value")) for e in page.query_selector_all("#hist rect.bar")]
        assert sum(bars) == len(results["rewards"]) == 18
        assert bars == _histogram(results["rewards"])  # ten equal bins from the lowest reward to the highest
        rows = page.query_selector_all("#tasks tbody tr")
        assert len(rows) == len(results["per_task"])
        shown = {
            r.get_attribute("data-task"): float(
                r.query_selector("td[data-key=mean_reward]").get_attribute("data-value")
            )
            for r in rows
        }
        assert shown == pytest.approx({t["task_id"]: t["mean_reward"] for t in results["per_task"]})
        seen_rows = {
            r.get_attribute("data-task"): float(r.query_selector("td[data-key=mean_reward]").inner_text())
            for r in rows
        }
        assert seen_rows == pytest.approx(shown, abs=5e-4)  # the text shown, to three places
        # sortable: a click on "mean reward" orders the rows by it, a second click reverses
        page.click("#tasks th[data-key=mean_reward]")
        values = [
            float(v)
            for v in page.eval_on_selector_all(
                "#tasks tbody td[data-key=mean_reward]", "els => els.map(e => e.dataset.value)"
            )
        ]
        assert values == sorted(values)
        page.click("#tasks th[data-key=mean_reward]")
        values = [
            float(v)
            for v in page.eval_on_selector_all(
                "#tasks tbody td[data-key=mean_reward]", "els => els.map(e => e.dataset.value)"
            )
        ]
        assert values == sorted(values, reverse=True)
        # the trajectory browser shows the chosen episode's turns
        page.select_option("#pick", "4")
        assert page.inner_text("#episode").count("turn ") >= 1
        assert "sample 1" in page.inner_text("#episode")
    finally:
        page.close()
    assert problems == []


def test_a_run_of_errors_only_still_opens(tmp_path: Path, browser) -> None:
    from openenv.eval._report import write_report

    results = run_eval(
        EvalConfig(env=str(ROOT / "envs" / "arith_env"), policy="oracle", out=tmp_path, count=2)
    )
    assert results["mean_reward"] is None
    assert results["errors"] == 2
    page, problems = _open(browser, write_report(tmp_path))
    try:
        assert "NoSolution" in page.inner_text("#episode")
    finally:
        page.close()
    assert problems == []


def test_script_end_tags_in_trajectories_do_not_break_the_page(tmp_path: Path, browser) -> None:
    from openenv.eval._report import write_report

    echo_run(tmp_path, "python:tests.eval._policies:script_tag", count=1, max_turns=1)
    page, problems = _open(browser, write_report(tmp_path))
    try:
        assert "</script><b>x</b>" in page.inner_text("#episode")
    finally:
        page.close()
    assert problems == []


def test_a_turns_warning_and_parse_failure_are_shown(tmp_path: Path, browser) -> None:
    """A turn cut to the model's context (its ``warnings``) and a reply that did not
    parse: the summary counts them as results.json does, the episode shows each."""
    from openenv.eval._report import write_report
    from openenv.eval._runner import write_results
    from openenv.eval._trajectory import FILE, Trajectory, Turn

    cut = "the prompt (463 tokens) and max_tokens (16) exceed the model's context of 256 tokens"
    turns = [
        Turn(index=0, observation={"prompt": "p"}, warnings=[cut], reward=0.0),
        Turn(
            index=1,
            observation={"prompt": "p"},
            parse_error={"reason": "the reply has no tool call", "reply": "x"},
        ),
    ]
    episode = Trajectory(
        run_id="r",
        env="e",
        policy="local:tiny",
        task_id="t",
        sample=0,
        seed=1,
        status="truncated",
        turns=turns,
        parse_failures=1,
        warnings=1,
    )
    (tmp_path / FILE).write_bytes(episode.to_line())
    results = write_results(tmp_path)
    assert (results["warnings"], results["parse_failures"]) == (1, 1)
    page, problems = _open(browser, write_report(tmp_path))
    try:
        cards = {
            e.get_attribute("data-metric"): float(e.get_attribute("data-value"))
            for e in page.query_selector_all("[data-metric]")
        }
        assert (cards["warnings"], cards["parse failures"]) == (1, 1)
        shown = page.inner_text("#episode")
        assert f"warning: {cut}" in shown
        assert "parse failure: the reply has no tool call" in shown
    finally:
        page.close()
    assert problems == []
