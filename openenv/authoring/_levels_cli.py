"""``openenv validate --level LEVEL [--output FILE]``: the RFC 008 report and upstream's
exit codes (0 pass or warn, 1 fail, 2 not an env package, 3 internal or policy error)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ._vreport import EXIT_INTERNAL, EXIT_UNSUPPORTED


def _fail(message: str, code: int) -> int:
    print(f"openenv validate: {message}", file=sys.stderr)
    return code


def run_levels(args: argparse.Namespace, actions: list[dict[str, Any]]) -> int:
    from ._levels import LEVELS, run_validation
    from ._vreport import write_report

    level = (args.level or "semantic").lower()
    if level not in LEVELS:
        return _fail(f"unknown level {level!r}; one of {', '.join(LEVELS)}", EXIT_INTERNAL)
    target = str(args.target)
    if "://" not in target and ":" not in target and not Path(target).is_dir():
        return _fail(f"not an env package folder: {target}", EXIT_UNSUPPORTED)
    output = Path(args.output) if args.output else None
    if output is not None and not output.parent.is_dir():
        return _fail(f"--output: no folder {output.parent}", EXIT_INTERNAL)
    headers = {"authorization": f"Bearer {args.token}"} if args.token else None
    try:
        report = run_validation(
            target,
            max_level=LEVELS[level],
            actions=actions,
            max_steps=args.max_steps,
            timeout_s=args.timeout,
            headers=headers,
        )
        payload = write_report(report, output)
    except Exception as exc:
        return _fail(
            f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            EXIT_INTERNAL,
        )
    print(json.dumps(json.loads(payload), indent=2) if args.json else report.render())
    return report.exit_code
