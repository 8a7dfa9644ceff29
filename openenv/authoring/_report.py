"""The result of ``openenv validate``: a list of named checks, each with an outcome."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    """How one check ended. Only ``FAIL`` makes the whole validation fail."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


@dataclass(slots=True)
class Check:
    """One conformance check: its name, outcome, a one-line summary and details."""

    name: str
    outcome: Outcome
    summary: str
    details: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Report:
    """Every check run against one target, in order."""

    target: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.outcome is not Outcome.FAIL for c in self.checks)

    def add(self, name: str, outcome: Outcome, summary: str, details: list[str] | None = None) -> Check:
        check = Check(name, outcome, summary, list(details or []))
        self.checks.append(check)
        return check

    def get(self, name: str) -> Check:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def failed(self) -> list[str]:
        return [c.name for c in self.checks if c.outcome is Outcome.FAIL]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "checks": [{**asdict(c), "outcome": c.outcome.value} for c in self.checks],
        }

    def render(self) -> str:
        """A readable report: one line per check, details indented, a verdict last."""
        marks = {Outcome.PASS: "PASS", Outcome.FAIL: "FAIL", Outcome.WARN: "WARN", Outcome.SKIP: "skip"}
        lines = [f"openenv validate {self.target}"]
        for c in self.checks:
            lines.append(f"  {marks[c.outcome]}  {c.name:<16} {c.summary}")
            lines.extend(f"        {d}" for d in c.details[:20])
        counts = {o: sum(c.outcome is o for c in self.checks) for o in Outcome}
        verdict = "OK" if self.ok else f"FAILED ({', '.join(self.failed())})"
        lines.append(
            f"{verdict}: {counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, "
            f"{counts[Outcome.WARN]} warnings, {counts[Outcome.SKIP]} skipped"
        )
        return "\n".join(lines)
