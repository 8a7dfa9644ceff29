"""Check ids the manifest declares not applicable (N/A), with the statement that does.

A check that cannot apply to an env is not skipped: the env's ``openenv.yaml`` says so
(as upstream's runner selects graders by the manifest's capabilities), the report
leaves the id out of its results, as upstream's does, and lists it as N/A with the
declaration (``ValidationReport.not_applicable``). Only a declaration can make a check
N/A; a check the run could not do for another reason stays a SKIP and lowers the
verdict. Where a check ran anyway (a PASS or a FAIL), its result is kept. Only ids that
upstream's report leaves out under the same declaration are made N/A (its runner's
``_applicable``), or ids it never reports locally (the image's, ``statistical.*``), so
that ours carries every id upstream's does.
"""

from __future__ import annotations

from .._manifest import Manifest
from .._vmanifest import ValidationBlock


def declared_not_applicable(manifest: Manifest | None, block: ValidationBlock | None) -> dict[str, str]:
    """check id -> the manifest's statement that makes it not applicable."""
    out: dict[str, str] = {}
    del manifest  # every declaration used so far is in the validation: block
    if block is None:
        return out
    caps = block.capabilities
    if not caps.rubric_tree:
        text = "capabilities.rubric_tree: false (no RFC 004 rubric tree to introspect or attribute to)"
        out["runtime.rubric_introspectable"] = text
        out["runtime.reward_attribution"] = text
    if block.task_distribution is None:
        out["static.task_distribution_pinning"] = "no task_distribution declared (nothing generated to pin)"
    if caps.oracle is None:
        # still run where the tasks ship reference solutions: a PASS or FAIL is kept
        out["statistical.reward_reachability"] = (
            "no capabilities.oracle declared (no reference solution to reach the top of the range with)"
        )
    return out
