"""The RFC 008 report of ``openenv validate --level``: upstream 0.10's report schema
(``report_schema_version`` 2), one ``CheckResult`` per check id, and a verdict."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._policy import CheckStatus, Lane, Level, Verdict

EXIT_PASS, EXIT_FAIL, EXIT_UNSUPPORTED, EXIT_INTERNAL = 0, 1, 2, 3


class CheckResult(BaseModel):
    """One check's finding, with what was measured, evidence lines and the fix."""

    model_config = ConfigDict(extra="forbid")

    check_id: str = Field(pattern=r"^[a-z_]+\.[a-z_]+$")
    status: CheckStatus
    measured: dict[str, Any] = Field(default_factory=dict)
    evidence: list[str] = Field(default_factory=list)
    remediation: str | None = None
    duration_s: float = Field(ge=0.0)


class ValidationReport(BaseModel):
    """Every check of one run, the manifest it read, and the verdict."""

    model_config = ConfigDict(extra="forbid")

    report_schema_version: Literal["1", "2"] = "2"
    target: str
    source_digest: str = ""
    signature: str = "openenv.yaml"
    manifest: dict[str, Any] | None = None
    policy_version: str
    lane: Lane = Lane.LOCAL
    levels_run: list[Level]
    results: list[CheckResult]
    verdict: Verdict
    #: check id -> the manifest's statement that makes it not applicable (``_applicable``).
    #: Left out of the JSON, as upstream's report leaves such ids out of its results.
    not_applicable: dict[str, str] = Field(default_factory=dict, exclude=True)

    def get(self, check_id: str) -> CheckResult:
        for result in self.results:
            if result.check_id == check_id:
                return result
        raise KeyError(check_id)

    @property
    def exit_code(self) -> int:
        return EXIT_FAIL if self.verdict is Verdict.FAIL else EXIT_PASS

    def render(self) -> str:
        """One line per check; evidence and the fix under each that did not pass."""
        lines = [
            f"openenv validate {self.target} (policy {self.policy_version}; levels "
            + ", ".join(level.name.lower() for level in self.levels_run)
            + ")"
        ]
        for r in self.results:
            lines.append(f"  {r.status.value.upper():5s} {r.check_id:<36} ({r.duration_s:.2f}s)")
            if r.status is not CheckStatus.PASS:
                lines.extend(f"          {line}" for line in r.evidence[:12])
                if r.remediation:
                    lines.append(f"          fix: {r.remediation}")
        for check_id, why in self.not_applicable.items():
            lines.append(f"  N/A   {check_id:<36} declared: {why}")
        lines.append(f"Verdict: {self.verdict.value.upper()}")
        return "\n".join(lines)


def write_report(report: ValidationReport, path: Path | None = None) -> str:
    """The report as JSON (no trailing newline); also written to ``path`` when given."""
    payload = report.model_dump_json(indent=2)
    if path is not None:
        Path(path).write_text(payload + "\n")
    return payload


class Results:
    """Collects results in order; ``timed`` measures each."""

    def __init__(self) -> None:
        self.items: list[CheckResult] = []
        self._started = time.monotonic()

    def start(self) -> None:
        self._started = time.monotonic()

    def add(
        self,
        check_id: str,
        status: CheckStatus,
        evidence: list[str] | str,
        *,
        remediation: str | None = None,
        measured: dict[str, Any] | None = None,
    ) -> CheckResult:
        lines = [evidence] if isinstance(evidence, str) else list(evidence)
        result = CheckResult(
            check_id=check_id,
            status=status,
            evidence=[line[:500] for line in lines[:30]],
            remediation=remediation if status in (CheckStatus.FAIL, CheckStatus.ERROR) else None,
            measured=dict(measured or {}),
            duration_s=max(0.0, time.monotonic() - self._started),
        )
        self.items = [r for r in self.items if r.check_id != check_id] + [result]
        self._started = time.monotonic()
        return result

    def has(self, check_id: str) -> bool:
        return any(r.check_id == check_id for r in self.items)
