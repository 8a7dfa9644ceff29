"""RFC 008's levels, statuses and severity policy, as ``openenv validate --level`` uses them.

The check ids, their levels and severities are upstream OpenEnv 0.10's (its policy
``v2``, local lane), so a report from either tool reads the same; ours adds a few ids
of its own (``runtime.bad_frames``, ``runtime.close``, ``runtime.http_routes``,
``semantic.reward_hacking``, ``statistical.leaky_tasks``); upstream's hub-lane
``statistical.headroom`` and ``statistical.variance_bound`` run locally here. A grader
only says pass/fail/skip/error; only this table says whether a failure blocks.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Level(IntEnum):
    """Validation levels, cheapest first; a run goes up to a ceiling."""

    STATIC = 1
    RUNTIME = 2
    SEMANTIC = 3
    STATISTICAL = 4


class Lane(StrEnum):
    LOCAL = "local"
    HUB = "hub"


class CheckStatus(StrEnum):
    """A check's finding. SKIP always carries its reason; ERROR fails the run."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


class Severity(StrEnum):
    FAIL = "fail"
    WARN = "warn"
    ADVISORY = "advisory"


class Verdict(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


POLICY_VERSION = "v2"

#: Reasons that start so mean the check does not apply to this env: such a SKIP does
#: not lower the verdict (upstream leaves these ids out of its report instead).
NOT_APPLICABLE = "not applicable: "

_F, _W = Severity.FAIL, Severity.WARN

#: check id -> (level, severity), in report order.
POLICY: dict[str, tuple[Level, Severity]] = {
    "static.manifest": (Level.STATIC, _F),
    "static.reproducible_build": (Level.STATIC, _F),
    "static.image_hygiene": (Level.STATIC, _W),
    "static.layout": (Level.STATIC, _W),
    "static.sbom": (Level.STATIC, _F),
    "static.oci_labels": (Level.STATIC, _F),
    "static.resource_declaration": (Level.STATIC, _F),
    "static.timeout_ceiling": (Level.STATIC, _F),
    "static.dependency_pinning": (Level.STATIC, _F),
    "static.task_distribution_pinning": (Level.STATIC, _F),
    "runtime.startup": (Level.RUNTIME, _F),
    "runtime.reward_well_formed": (Level.RUNTIME, _F),
    "runtime.rubric_introspectable": (Level.RUNTIME, _W),
    "runtime.observation_schema": (Level.RUNTIME, _F),
    "runtime.state_contract": (Level.RUNTIME, _F),
    "runtime.trajectory_record": (Level.RUNTIME, _W),
    "runtime.reward_attribution": (Level.RUNTIME, _W),
    "runtime.tool_declaration_accuracy": (Level.RUNTIME, _F),
    "runtime.task_declaration_accuracy": (Level.RUNTIME, _F),
    "runtime.seed_control": (Level.RUNTIME, _F),
    "runtime.episode_determinism": (Level.RUNTIME, _F),
    "runtime.network_policy": (Level.RUNTIME, _F),
    "runtime.host_containment": (Level.RUNTIME, _F),
    "runtime.resource_bounds": (Level.RUNTIME, _F),
    "runtime.episode_isolation": (Level.RUNTIME, _F),
    "runtime.oracle_containment": (Level.RUNTIME, _F),
    "runtime.http_routes": (Level.RUNTIME, _F),
    "runtime.bad_frames": (Level.RUNTIME, _F),
    "runtime.close": (Level.RUNTIME, _F),
    "semantic.oracle_max": (Level.SEMANTIC, _F),
    "semantic.floor_gap": (Level.SEMANTIC, _F),
    "semantic.canary_floor": (Level.SEMANTIC, _F),
    "semantic.no_solution_leakage": (Level.SEMANTIC, _F),
    "semantic.verifier_determinism": (Level.SEMANTIC, _F),
    "semantic.verifier_portability": (Level.SEMANTIC, _F),
    "semantic.resource_envelope": (Level.SEMANTIC, _F),
    "semantic.replayability": (Level.SEMANTIC, _F),
    "semantic.reward_hacking": (Level.SEMANTIC, _F),
    "statistical.reward_reachability": (Level.STATISTICAL, _F),
    "statistical.headroom": (Level.STATISTICAL, _W),
    "statistical.leaky_tasks": (Level.STATISTICAL, _F),
    "statistical.variance_bound": (Level.STATISTICAL, _F),
}

#: Upper bounds on what a manifest may declare (upstream's ``bounds``).
MAX_ORACLE_TOLERANCE = 0.1
MIN_FLOOR_MARGIN = 0.1
MAX_VARIANCE_TOLERANCE = 0.2
MAX_EPISODE_TIMEOUT_S = 3600.0


def ids_up_to(level: Level) -> list[str]:
    return [cid for cid, (lvl, _) in POLICY.items() if lvl <= level]


def verdict(results: list[tuple[str, CheckStatus, str]]) -> Verdict:
    """(check id, status, first evidence line) -> the run's verdict.

    ERROR fails; FAIL fails where the policy says so, else warns; a SKIP warns unless
    the check does not apply. An id the policy does not know is a ``KeyError``.
    """
    out = Verdict.PASS
    for check_id, status, reason in results:
        _, severity = POLICY[check_id]
        if status is CheckStatus.ERROR or (status is CheckStatus.FAIL and severity is Severity.FAIL):
            return Verdict.FAIL
        if status is CheckStatus.FAIL or (
            status is CheckStatus.SKIP and not reason.startswith(NOT_APPLICABLE)
        ):
            out = Verdict.WARN
    return out
