"""``openenv validate --level runtime`` on the echo env: STATIC and RUNTIME, timed.

Issue 33's bound: the STATIC and RUNTIME levels on the echo env within 5 s. Each round
times, one after the other:

* ``cli``: ``openenv validate envs/echo_env --level runtime`` as a user runs it (a new
  Python, the server started and stopped; wall clock of the whole command);
* ``in-process``: ``run_validation(envs/echo_env, max_level=Level.RUNTIME)`` in this
  process (the server is still a child process, started and stopped each time);
* ``upstream``: upstream 0.10's ``openenv validate envs/echo_env --level runtime
  --skip-build`` in its own venv, the baseline of the same round. It checks the manifest
  and skips every RUNTIME check (it builds no image): a floor for "a validate command",
  not the same work.

Also the same two of ours on ``envs/arith_env``. Figures are medians (and maxima) over
the rounds; the ratio is ours to upstream's in the same round, the median of the rounds'.

    .venv/bin/python bench/bench_validate_runtime.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import ROOT, UPSTREAM_PY, loadavg, median, table, upstream_available

BOUND_S = 5.0


def _cli(folder: Path) -> float:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "openenv", "validate", str(folder), "--level", "runtime"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    took = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"openenv validate {folder} exited {done.returncode}:\n{done.stdout[-2000:]}")
    return took


def _in_process(folder: Path) -> float:
    from openenv.authoring._levels import run_validation
    from openenv.authoring._policy import CheckStatus, Level

    started = time.monotonic()
    report = run_validation(folder, max_level=Level.RUNTIME)
    took = time.monotonic() - started
    skipped = [r.check_id for r in report.results if r.status is not CheckStatus.PASS]
    if skipped:
        raise SystemExit(f"{folder.name}: not every check passed: {skipped}")
    return took


def _upstream(folder: Path) -> float:
    code = (
        "import sys; from openenv.cli.__main__ import main; "
        f"sys.argv = ['openenv', 'validate', {str(folder)!r}, '--level', 'runtime', '--skip-build']; main()"
    )
    started = time.monotonic()
    subprocess.run([str(UPSTREAM_PY), "-I", "-c", code], cwd="/", capture_output=True, timeout=300)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    echo, arith = ROOT / "envs" / "echo_env", ROOT / "envs" / "arith_env"
    upstream = upstream_available() is None
    print(f"load average at start: {loadavg()}")
    runs: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, fn in (
            ("echo cli", lambda: _cli(echo)),
            ("echo in-process", lambda: _in_process(echo)),
            ("arith cli", lambda: _cli(arith)),
            ("arith in-process", lambda: _in_process(arith)),
            *((("upstream echo cli (static only)", lambda: _upstream(echo)),) if upstream else ()),
        ):
            runs.setdefault(name, []).append(fn())
    base = runs.get("upstream echo cli (static only)")
    rows = []
    for name, xs in runs.items():
        ratio = f"{median(a / b for a, b in zip(xs, base, strict=True)):.2f}x" if base else "-"
        rows.append([name, f"{median(xs):.2f}", f"{max(xs):.2f}", ratio])
    print(table(["run", "median s", "max s", "vs upstream"], rows))
    worst = max(runs["echo cli"])
    verdict = "within" if worst <= BOUND_S else "OVER"
    print(
        f"echo STATIC+RUNTIME from the command line: worst {worst:.2f} s, {verdict} the {BOUND_S:.0f} s bound"
    )
    print(f"load average at end: {loadavg()}")


if __name__ == "__main__":
    main()
