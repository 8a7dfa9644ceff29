"""``openenv validate --level`` timed against an older checkout, in alternating rounds.

    .venv/bin/python bench/bench_validate_ab.py --old REV [--path openenv/authoring] [--rounds 3]
        [--cases echo:runtime,coding:semantic]

Issue 33's bounds: STATIC+RUNTIME on the echo env within 5 s, the full SEMANTIC level
(with the reward-hacking probes) on the coding env within 60 s. On a machine whose
load changes by the minute, an absolute figure says little; so each round runs every
case with this checkout's ``openenv`` and with ``REV``'s (``git archive`` into a
temporary folder, put first on ``PYTHONPATH``: the server started for the run imports
it too), one after the other, and the ratio new/old is taken within the round. With
``--path P``, the old tree is this checkout's ``openenv/`` with only ``P`` taken from
``REV``: what changed elsewhere since (the server, the envs' runtime) is the same on
both sides. Each
run is a new Python doing ``run_validation(envs/ENV, max_level=LEVEL)`` as the CLI does
(its imports counted); the wall time and the five slowest checks are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_ONE = """
import json, sys, time
started = time.perf_counter()
from openenv.authoring._levels import run_validation
from openenv.authoring._policy import Level
report = run_validation(sys.argv[1], max_level=Level[sys.argv[2].upper()])
wall = time.perf_counter() - started
slow = sorted(report.results, key=lambda r: -r.duration_s)[:5]
print(json.dumps({"wall": wall, "verdict": report.verdict.value,
                  "slow": [[r.check_id, round(r.duration_s, 2)] for r in slow]}))
"""


def _run(tree: Path | None, env: str, level: str) -> dict[str, object]:
    path = os.pathsep.join(p for p in (str(tree) if tree else "", os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", _ONE, str(ROOT / "envs" / f"{env}_env"), level],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise SystemExit(f"{env} {level} failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the git revision to compare with")
    parser.add_argument("--path", help="take only this part of openenv/ from --old (e.g. openenv/authoring)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default="echo:runtime,coding:semantic")
    args = parser.parse_args()
    cases = [tuple(c.split(":")) for c in args.cases.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-validate-old-") as tmp:
        old = Path(tmp)
        if args.path:
            shutil.copytree(ROOT / "openenv", old / "openenv", ignore=shutil.ignore_patterns("__pycache__"))
            shutil.rmtree(old / args.path)
        part = args.path or "openenv"
        archive = subprocess.run(
            ["git", "archive", args.old, part], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        ratios: dict[str, list[float]] = {f"{e}:{lvl}": [] for e, lvl in cases}
        walls: dict[str, list[tuple[float, float]]] = {k: [] for k in ratios}
        for n in range(max(1, args.rounds)):
            for env, level in cases:
                key = f"{env}:{level}"
                a = _run(old, env, level)
                load_a = os.getloadavg()[0]
                b = _run(None, env, level)
                load_b = os.getloadavg()[0]
                wa, wb = float(a["wall"]), float(b["wall"])  # type: ignore[arg-type]
                ratios[key].append(wb / wa)
                walls[key].append((wa, wb))
                print(
                    f"round {n + 1} {key}: old {wa:.2f} s (load {load_a:.1f}), new {wb:.2f} s "
                    f"(load {load_b:.1f}), new/old {wb / wa:.2f}; verdicts {a['verdict']}/{b['verdict']}\n"
                    f"    old slowest {a['slow']}\n    new slowest {b['slow']}",
                    flush=True,
                )
        for key, rs in ratios.items():
            olds, news = [w[0] for w in walls[key]], [w[1] for w in walls[key]]
            print(
                f"{key}: median old {statistics.median(olds):.2f} s, new {statistics.median(news):.2f} s, "
                f"median new/old {statistics.median(rs):.2f} over {len(rs)} round(s)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
