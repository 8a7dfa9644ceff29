"""Does the /web playground cost anything at server start?

Spawn -> first answered reset for ``openenv serve echo`` with and without ``--no-web``,
alternating in pairs (a pair shares the machine's noise), the median of the per-pair
ratios reported. Then the first and later ``GET /web/`` on a running server (the files
are read on the first request).

    .venv/bin/python bench/bench_web.py --repeats 12
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request

from _util import Server, free_port, median, ours_server, paired_ratio, spread, stop_all


def _no_web(port: int) -> Server:
    server = ours_server(port, name="no-web")
    server.argv.append("--no-web")
    return server


def _get_ms(url: str) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=10) as resp:
        resp.read()
    return (time.perf_counter() - t) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    web, no_web = [], []
    first_ms, later_ms = [], []
    try:
        for i in range(args.repeats):
            order = [(ours_server, web), (_no_web, no_web)]
            for make, out in order if i % 2 == 0 else order[::-1]:
                server = make(free_port()).start()
                try:
                    out.append(server.wait_ready())
                    if out is web:
                        first_ms.append(_get_ms(server.base + "/web/"))
                        later_ms.append(median(_get_ms(server.base + "/web/") for _ in range(5)))
                finally:
                    server.stop()
    finally:
        stop_all()
    result = {
        "repeats": args.repeats,
        "load_avg": os.getloadavg(),
        "spawn_to_reset_web_s": median(web),
        "spawn_to_reset_no_web_s": median(no_web),
        "web_over_no_web": paired_ratio(web, no_web),
        "web_spread_s": spread(web),
        "no_web_spread_s": spread(no_web),
        "first_get_web_ms": median(first_ms),
        "later_get_web_ms": median(later_ms),
    }
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
