"""``openenv.validation``: upstream OpenEnv 0.10's names for ``openenv validate --level``
(RFC 008), over ``openenv.authoring``'s classes. A name layer only: the checks, the
policy table and the report live in ``openenv.authoring`` (``_levels``, ``_policy``,
``_vreport``, ``_vmanifest``); see docs/validate.md.
"""

from __future__ import annotations

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from .._exceptions import ManifestError as ManifestError
    from .._vmanifest import CapabilitiesSpec as CapabilitiesSpec
    from .._vmanifest import JudgePin as JudgePin
    from .._vmanifest import NetworkPolicy as NetworkPolicy
    from .._vmanifest import OracleDeclaration as OracleDeclaration
    from .._vmanifest import ResourceDeclaration as ResourceDeclaration
    from .._vmanifest import RewardDeclaration as RewardDeclaration
    from .._vmanifest import TaskDistributionPin as TaskDistributionPin
    from .._vmanifest import TypeSpec as TypeSpec
    from .._vmanifest import VerifierBinding as VerifierBinding
    from ..authoring._policy import CheckStatus as CheckStatus
    from ..authoring._policy import Lane as Lane
    from ..authoring._policy import Level as Level
    from ..authoring._policy import Severity as Severity
    from ..authoring._policy import Verdict as Verdict
    from ..authoring._vreport import CheckResult as CheckResult
    from ..authoring._vreport import ValidationReport as ValidationReport
    from ..authoring._vreport import write_report as write_report
    from .runner import run_validation as run_validation

_NAMES = {
    "ManifestError": ".._exceptions",
    **dict.fromkeys(("CheckStatus", "Lane", "Level", "Severity", "Verdict"), "..authoring._policy"),
    **dict.fromkeys(
        (
            "CapabilitiesSpec",
            "JudgePin",
            "NetworkPolicy",
            "OracleDeclaration",
            "ResourceDeclaration",
            "RewardDeclaration",
            "TaskDistributionPin",
            "TypeSpec",
            "VerifierBinding",
        ),
        ".._vmanifest",
    ),
    **dict.fromkeys(("CheckResult", "ValidationReport", "write_report"), "..authoring._vreport"),
    "run_validation": ".runner",
}

#: Upstream names with no counterpart here, and why.
_MISSING = (
    {
        name: "the severity policy is a table in openenv.authoring._policy (POLICY), not a loadable object"
        for name in (
            "SeverityPolicy",
            "PolicyEntry",
            "PolicyError",
            "DeclarationBounds",
            "load_policy",
            "apply_policy",
        )
    }
    | {
        name: "graders, parsers and providers are not pluggable here: the checks are openenv.authoring's"
        for name in (
            "Grader",
            "GraderRegistry",
            "Parser",
            "ParserRegistry",
            "ValidationProvider",
            "RunningSubject",
            "ExecResult",
            "Subject",
            "ENTRY_POINT_GROUP",
            "ProviderCapability",
        )
    }
    | {
        name: "one package format (openenv.yaml) is read; the validation: block is ValidationBlock"
        for name in (
            "NormalizedManifest",
            "SignatureKind",
            "SignatureError",
            "UnsupportedPackageError",
            "detect_signature",
            "UNSUPPORTED_CATEGORIES",
            "WELL_KNOWN_FILES",
        )
    }
)

__all__ = sorted(_NAMES)

__getattr__, __dir__ = _lazy_exports(__name__, _NAMES, __all__, missing=_MISSING)
