"""Compare two JUnit reports of the same tests: ``_suite_compare.py BASELINE.xml OURS.xml``.

Prints how many tests pass in each, the share of the baseline's passing tests that
pass in ours, and each test that passes in the baseline but not in ours, grouped by
file with the first line of its failure. Used by ``scripts/upstream_suite.sh``.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def outcomes(path: str) -> dict[str, tuple[str, str]]:
    """``{test id: (outcome, first line of the failure)}``."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        outcome, why = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, why = (
                    "failed",
                    (child.get("message") or "").splitlines()[0][:160] if child.get("message") else "",
                )
                break
            if child.tag == "skipped":
                outcome = "skipped"
        found[test] = (outcome, why)
    return found


def main(baseline_path: str, ours_path: str) -> int:
    baseline, ours = outcomes(baseline_path), outcomes(ours_path)
    passing = {t for t, (o, _) in baseline.items() if o == "passed"}
    ours_passing = {t for t, (o, _) in ours.items() if o == "passed"}
    kept = passing & ours_passing
    share = 100.0 * len(kept) / max(1, len(passing))
    print(f"upstream 0.10.0: {len(passing)} passed; ours: {len(ours_passing)} passed")
    print(f"ours passes {len(kept)} of upstream's {len(passing)} passing tests: {share:.1f}%")
    by_file: dict[str, list[str]] = defaultdict(list)
    for test in sorted(passing - ours_passing):
        outcome, why = ours.get(test, ("not collected", ""))
        by_file[test.split("::")[0]].append(f"  {test.split('::', 1)[1]}: {outcome} {why}".rstrip())
    for name, lines in sorted(by_file.items(), key=lambda kv: -len(kv[1])):
        print(f"{name} ({len(lines)})")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
