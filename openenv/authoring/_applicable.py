"""Check ids the manifest declares not applicable (N/A), with the statement that does.

A check that cannot apply to an env is not skipped: the env's ``openenv.yaml`` says so
(as upstream's runner selects graders by the manifest's capabilities), the report
leaves the id out of its results, as upstream's does, and lists it as N/A with the
declaration (``ValidationReport.not_applicable``). Only a declaration can make a check
N/A; a check the run could not do for another reason stays a SKIP and lowers the
verdict. Where a check ran anyway (a PASS or a FAIL), its result is kept.
"""

from __future__ import annotations

from .._manifest import Manifest
from .._vmanifest import ValidationBlock


def declared_not_applicable(manifest: Manifest | None, block: ValidationBlock | None) -> dict[str, str]:
    """check id -> the manifest's statement that makes it not applicable."""
    out: dict[str, str] = {}
    if manifest is not None and not manifest.deterministic:
        # the episode may diverge under a seed: a divergence is no failure (a replay that
        # agrees anyway still PASSes)
        out["runtime.episode_determinism"] = "deterministic: false (the env claims no determinism)"
    if block is None:
        return out
    caps = block.capabilities
    if not caps.rubric_tree:
        text = "capabilities.rubric_tree: false (no RFC 004 rubric tree to introspect or attribute to)"
        out["runtime.rubric_introspectable"] = text
        out["runtime.reward_attribution"] = text
    if block.task_distribution is None:
        out["static.task_distribution_pinning"] = (
            "no task_distribution declared (the tasks are files shipped in the package)"
        )
    if caps.oracle is None:
        # still run where the tasks ship reference solutions: a PASS or FAIL is kept
        out["statistical.reward_reachability"] = (
            "no capabilities.oracle declared (no reference solution to reach the top of the range with)"
        )
    if not caps.canaries:
        out["semantic.canary_floor"] = "no capabilities.canaries declared (no canary trajectories shipped)"
    return out
