"""The project reads nothing outside its own tree: no path into the workspace around it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A path out of the repository: the workspace around it, or a sibling folder.
OUTSIDE = re.compile(r"/work/shared\b|\.\./shared\b|shared/anchors|OPENENV_BENCH_ANCHORS")


def test_no_tracked_file_points_outside_the_repository() -> None:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    hits = []
    for name in files.stdout.splitlines():
        path = ROOT / name
        if name == "tests/test_self_contained.py" or not path.is_file() or path.suffix in {".png", ".whl"}:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        hits += [f"{name}:{i}" for i, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]
    assert not hits, f"paths outside the repository: {hits}"


def test_the_bench_baselines_are_in_the_repository() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import _util
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert _util.BASELINES == ROOT / "bench" / "baselines"
    assert (_util.BASELINES / "raw_ws.py").is_file()
    assert (_util.BASELINES / "upstream_echo.py").is_file()
    assert str(ROOT) in " ".join(_util.raw_server(1).argv)
