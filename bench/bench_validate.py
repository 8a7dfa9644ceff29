"""``openenv validate --level semantic`` wall time on the code-running envs.

    .venv/bin/python bench/bench_validate.py [--envs coding_env,terminal_env] [--repeats 1]

Issue 33's bound: the full SEMANTIC level (the oracle on every task with a reference
solution, the null and random policies, the replays, a second server for portability,
every reward-hacking probe on the first 2 tasks) on the coding env within 60 s. Echo's
SEMANTIC level runs in the same process first, as the baseline of the ratio. Each run
serves the folder on a loopback port and stops it; nothing else is started.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from openenv.authoring._levels import run_validation
from openenv.authoring._policy import Level
from openenv.authoring._vreport import ValidationReport

REPO = Path(__file__).resolve().parents[1]
BOUND_S = {"coding_env": 60.0}


def one(env: str) -> tuple[float, ValidationReport]:
    start = time.perf_counter()
    report = run_validation(REPO / "envs" / env, max_level=Level.SEMANTIC)
    return time.perf_counter() - start, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="coding_env,terminal_env")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    base, _ = one("echo_env")
    print(f"load {os.getloadavg()[0]:.1f}; echo_env SEMANTIC {base:.1f} s (baseline)")
    failed = False
    for env in args.envs.split(","):
        for _ in range(max(1, args.repeats)):
            wall, report = one(env)
            slow = sorted(report.results, key=lambda r: -r.duration_s)[:5]
            bound = BOUND_S.get(env)
            over = bound is not None and wall > bound
            failed |= over
            print(
                f"{env}: SEMANTIC {wall:.1f} s ({wall / base:.1f}x echo), verdict "
                f"{report.verdict.value}{f', OVER the {bound:.0f} s bound' if over else ''}; "
                f"load {os.getloadavg()[0]:.1f}; slowest: "
                + ", ".join(f"{r.check_id} {r.duration_s:.1f} s" for r in slow)
            )
            oracle = report.get("semantic.oracle_max")
            print(f"  oracle_max: {oracle.status.value}: {oracle.evidence[0]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
