"""STATIC level: what can be checked from the env folder without running it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._exceptions import ManifestError
from .._manifest import MANIFEST, Manifest, load_manifest
from .._vmanifest import ValidationBlock
from ._policy import (
    MAX_EPISODE_TIMEOUT_S,
    MAX_ORACLE_TOLERANCE,
    MAX_VARIANCE_TOLERANCE,
    MIN_FLOOR_MARGIN,
    NOT_APPLICABLE,
    CheckStatus,
)
from ._recipe import run_recipe
from ._report import Outcome, Report
from ._vreport import Results

BLOCK_FIX = (
    "add a validation: block to openenv.yaml declaring reward (range, floor_margin), resources "
    "(cpu, memory_mb, disk_mb, episode_timeout_s), capabilities (verifier) and types (tags); "
    "see docs/validate.md"
)


def normalized(manifest: Manifest, block: ValidationBlock | None) -> dict[str, Any]:
    """The manifest as the report embeds it (upstream's normalized manifest's keys)."""
    out: dict[str, Any] = {
        "manifest_schema_version": "2" if block is not None and block.execution is not None else "1",
        "name": manifest.name,
        "version": manifest.version,
        "signature": MANIFEST,
    }
    if block is not None:
        out.update(block.model_dump(mode="json"))
        if block.execution is None:
            del out["execution"]
    return out


def run_static(folder: Path, results: Results) -> tuple[Manifest | None, ValidationBlock | None]:
    """Every STATIC check id gets a result; returns what the rest of the run needs."""
    manifest, block = _manifest(folder, results)
    _layout(folder, results)
    if block is None:
        reason = "unmet dependency: static.manifest (no valid validation: block)"
        for check_id in (
            "static.resource_declaration",
            "static.timeout_ceiling",
            "static.task_distribution_pinning",
        ):
            results.add(check_id, CheckStatus.SKIP, reason)
    else:
        res = block.resources
        results.add(
            "static.resource_declaration",
            CheckStatus.PASS,
            f"cpu {res.cpu}, memory {res.memory_mb} MB, disk {res.disk_mb} MB, gpus {res.gpus}",
            measured=res.model_dump(),
        )
        ceiling = res.episode_timeout_s <= MAX_EPISODE_TIMEOUT_S
        results.add(
            "static.timeout_ceiling",
            CheckStatus.PASS if ceiling else CheckStatus.FAIL,
            f"episode_timeout_s {res.episode_timeout_s} (ceiling {MAX_EPISODE_TIMEOUT_S})",
            remediation=f"declare resources.episode_timeout_s at most {MAX_EPISODE_TIMEOUT_S}",
            measured={"episode_timeout_s": res.episode_timeout_s},
        )
        _task_pinning(block, results)
    run_recipe(folder, results)  # the image's ids, judged from its build recipe
    return manifest, block


def _manifest(folder: Path, results: Results) -> tuple[Manifest | None, ValidationBlock | None]:
    if not (folder / MANIFEST).is_file():
        results.add("static.manifest", CheckStatus.FAIL, f"no {MANIFEST} in {folder}", remediation=BLOCK_FIX)
        return None, None
    try:
        manifest = load_manifest(folder)
    except ManifestError as exc:
        results.add("static.manifest", CheckStatus.FAIL, str(exc), remediation="fix the key the error names")
        return None, None
    block = manifest.validation_block()
    if block is None:
        results.add(
            "static.manifest", CheckStatus.FAIL, f"{MANIFEST} has no validation: block", remediation=BLOCK_FIX
        )
        return manifest, None
    reward = block.reward
    problems = []
    if reward.oracle_tolerance > MAX_ORACLE_TOLERANCE:
        problems.append(f"reward.oracle_tolerance {reward.oracle_tolerance} is over {MAX_ORACLE_TOLERANCE}")
    if reward.floor_margin < MIN_FLOOR_MARGIN:
        problems.append(f"reward.floor_margin {reward.floor_margin} is under {MIN_FLOOR_MARGIN}")
    if reward.variance_tolerance is not None and reward.variance_tolerance > MAX_VARIANCE_TOLERANCE:
        problems.append(
            f"reward.variance_tolerance {reward.variance_tolerance} is over {MAX_VARIANCE_TOLERANCE}"
        )
    results.add(
        "static.manifest",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [f"{MANIFEST}: {manifest.name}, validation block within the policy's bounds"],
        remediation="declare tolerances within the policy's bounds (docs/validate.md)",
        measured={
            "oracle_tolerance": reward.oracle_tolerance,
            "floor_margin": reward.floor_margin,
            "reward_range": list(reward.range),
        },
    )
    return manifest, block


def _layout(folder: Path, results: Results) -> None:
    from ._validate import check_folder

    legacy = Report(str(folder))
    check_folder(folder, legacy)
    files = legacy.get("files")
    status = {Outcome.PASS: CheckStatus.PASS, Outcome.WARN: CheckStatus.FAIL}.get(
        files.outcome, CheckStatus.FAIL
    )
    results.add(
        "static.layout",
        status,
        [files.summary, *files.details],
        remediation='give the folder pyproject.toml with [project.entry-points."openenv.envs"], '
        "a Dockerfile and a README.md (openenv init makes all three)",
    )


def _task_pinning(block: ValidationBlock, results: Results) -> None:
    pin = block.task_distribution
    if pin is None:
        results.add(
            "static.task_distribution_pinning",
            CheckStatus.SKIP,
            NOT_APPLICABLE + "no task_distribution declared (the tasks are shipped files)",
        )
        return
    ok = pin.generator_seed is not None or pin.dataset_version is not None
    results.add(
        "static.task_distribution_pinning",
        CheckStatus.PASS if ok else CheckStatus.FAIL,
        f"task_distribution: {pin.model_dump(exclude_none=True)}",
        remediation="pin task_distribution.generator_seed or dataset_version",
    )
