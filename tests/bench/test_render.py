"""docs/benchmarks.md's current figures are the newest stored run, rendered (never edited by hand)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import render  # noqa: E402  (bench/render.py)


def test_the_page_shows_the_newest_stored_run_as_rendered() -> None:
    page = render.PAGE.read_text()
    start, end = page.index(render.START), page.index(render.END) + len(render.END)
    assert page[start:end] == render.section(render.newest())


def test_a_stored_run_names_its_command_and_machine() -> None:
    text = render.section(render.newest())
    assert "bench/run.py" in text
    assert "CPUs" in text
    assert "| figure" in text
