"""``python -m openenv.rewards module:function [--host H] [--port P]``: serve a reward."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

from ._external import RewardServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openenv.rewards", description=__doc__)
    parser.add_argument("target", help="module:function scoring (action, observation)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    args = parser.parse_args(argv)
    module, _, attr = args.target.partition(":")
    if not attr:
        parser.error("target must be module:function")
    sys.path.insert(0, ".")
    fn = getattr(importlib.import_module(module), attr)
    server = RewardServer(fn, host=args.host, port=args.port)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
