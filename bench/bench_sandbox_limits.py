"""What the session limits (a cgroup and a tmpfs per sandbox) cost: before and after.

Same run, alternating blocks, at the level this machine gives (bubblewrap here):

* ``reset``: a new sandbox (``Sandbox(config)``: directory, uid, cgroup, tmpfs) and its
  close, as a terminal or coding session pays on each reset;
* ``step``: one command in an open sandbox (``sh -c true``), as a terminal step runs one.

Each with the limits ``off`` and with the defaults; a figure is the median over
``--rounds`` of each block's median, the overhead the median of per-round differences.

    .venv/bin/python bench/bench_sandbox_limits.py [--resets 20] [--steps 50] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import loadavg, table
from openenv.sandbox import Sandbox, SandboxConfig
from openenv.sandbox._config import SessionLimits

CONFIGS = {
    "limits off": SandboxConfig(level="auto", session_limits=SessionLimits.off()),  # type: ignore[arg-type]
    "limits on": SandboxConfig(level="auto"),  # type: ignore[arg-type]
}


def reset_ms(config: SandboxConfig, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with Sandbox(config):
            pass
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def step_ms(config: SandboxConfig, n: int) -> float:
    times = []
    with Sandbox(config) as box:
        for _ in range(n):
            t0 = time.perf_counter()
            box.run(["sh", "-c", "true"], timeout_s=10)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resets", type=int, default=20)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with Sandbox(CONFIGS["limits on"]) as box:
        report = box.describe()
    got: dict[str, dict[str, list[float]]] = {name: {"reset": [], "step": []} for name in CONFIGS}
    for _ in range(args.rounds):
        for name, config in CONFIGS.items():
            got[name]["reset"].append(reset_ms(config, args.resets))
            got[name]["step"].append(step_ms(config, args.steps))
    rows = []
    for kind in ("reset", "step"):
        off, on = got["limits off"][kind], got["limits on"][kind]
        extra = statistics.median(b - a for a, b in zip(off, on, strict=True))
        rows.append([kind, f"{statistics.median(off):.2f}", f"{statistics.median(on):.2f}", f"{extra:+.2f}"])
    print(f"level {report['level']}; session limits {report.get('session_limits')}")
    print(f"load {loadavg()}; {args.rounds} rounds")
    print(table(["ms (median)", "limits off", "limits on", "overhead"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
