"""Render the current figures of docs/benchmarks.md from a stored ``bench/run.py --out`` file.

    .venv/bin/python bench/render.py                      # print the newest bench/results/*.json
    .venv/bin/python bench/render.py --write              # and put it in docs/benchmarks.md
    .venv/bin/python bench/render.py bench/results/X.json --write

The page's "Current figures" section lies between two markers and is never edited by
hand: a new run is stored under ``bench/results/`` (named by its UTC date) and rendered
here, so the page shows exactly what the stored JSON holds (tests/bench/test_render.py
checks it). Older runs stay in docs/benchmarks-history.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PAGE = HERE.parent / "docs" / "benchmarks.md"
START = "<!-- bench:current:start (bench/render.py writes this section) -->"
END = "<!-- bench:current:end -->"

sys.path.insert(0, str(HERE))


def newest() -> Path:
    """The newest stored run (names sort by date)."""
    runs = sorted(RESULTS.glob("*.json"))
    if not runs:
        raise SystemExit(f"render: no results in {RESULTS}; run bench/run.py --out {RESULTS}/DATE.json")
    return runs[-1]


def section(path: Path) -> str:
    """The markdown between the markers for the run stored at ``path``."""
    import run  # bench/run.py: the same rendering as a live run prints

    res: dict[str, Any] = json.loads(path.read_text())
    m = res["machine"]
    rel = os.path.relpath(path, HERE.parent)
    head = (
        f"Stored run `{rel}`: {m['mode']} run of `{m['command']}` on {m['date']}"
        f" ({m.get('cpus', '?')} CPUs), rendered by `bench/render.py`."
    )
    body = run.render(res).replace("\n# Results", "\n### Results", 1)
    return f"{START}\n{head}\n{body}{END}"


def replace_section(page: str, new: str) -> str:
    """``page`` with its marked section replaced by ``new``."""
    try:
        a = page.index(START)
        b = page.index(END, a) + len(END)
    except ValueError:
        raise SystemExit(f"render: {PAGE} has no '{START}' ... '{END}' section") from None
    return page[:a] + new + page[b:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?", help="a bench/run.py --out file (default: newest)")
    ap.add_argument("--write", action="store_true", help="replace the current figures in docs/benchmarks.md")
    a = ap.parse_args()
    path = Path(a.results) if a.results else newest()
    text = section(path)
    if a.write:
        PAGE.write_text(replace_section(PAGE.read_text(), text))
        print(f"render: wrote {path.name} into {PAGE.relative_to(HERE.parent)}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
