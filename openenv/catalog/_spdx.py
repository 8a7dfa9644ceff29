"""Licenses and requirements as a card states them: SPDX expressions in canonical form
and the one ``openenv`` requirement of an env's pyproject (``packaging`` parses both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._exceptions import MetadataError
from .._extras import require

#: Values a card may carry instead of an SPDX expression.
NOT_SPDX = frozenset({"other", "unknown"})


def _packaging(module: str) -> Any:
    return require(f"packaging.{module}", extra="authoring", feature="openenv catalog")


def license_expression(value: str) -> str:
    """``value`` in canonical SPDX form (``mit`` -> ``MIT``), or ``other``/``unknown``;
    ``ValueError`` when it is neither."""
    if value in NOT_SPDX:
        return value
    return str(_packaging("licenses").canonicalize_license_expression(value))


def openenv_requirement(value: str) -> str:
    """``value`` if it is a requirement on the ``openenv`` package."""
    requirements = _packaging("requirements")
    name = requirements.Requirement(value).name
    if _packaging("utils").canonicalize_name(name) != "openenv":
        raise ValueError("framework_requirement must declare the openenv package")
    return value


@dataclass(frozen=True, slots=True)
class License:
    """A license as found in one file: an SPDX expression, ``other`` (with the text
    that is not one) or ``unknown``."""

    expression: str
    text: str | None = None


def read_license(value: object) -> License | None:
    """The license a pyproject ``license`` field or README front-matter states; None
    when nothing is stated. A ``{file = ...}`` alone names no license: ``unknown``."""
    if value is None:
        return None
    if isinstance(value, dict):
        if "file" in value and "text" in value:
            raise MetadataError(
                "invalid_metadata", "License file and text declarations are mutually exclusive"
            )
        value = value.get("text")
        if value is None:
            return License("unknown")
    if not isinstance(value, str) or not value.strip():
        return License("unknown")
    value = value.strip()
    if value in NOT_SPDX:
        return License(value)
    try:
        return License(license_expression(value))
    except _packaging("licenses").InvalidLicenseExpression:
        return License("other", value.replace("\r\n", "\n").replace("\r", "\n"))


def framework_requirement(project: dict[str, Any]) -> str | None:
    """The one ``openenv`` entry of ``[project] dependencies``, None without one."""
    requirements = _packaging("requirements")
    dependencies = project.get("dependencies", [])
    if not isinstance(dependencies, list):
        raise MetadataError("invalid_metadata", "Package dependencies must be an array")
    found = []
    for item in dependencies:
        if not isinstance(item, str):
            raise MetadataError("invalid_metadata", "Dependency declarations must be strings")
        try:
            name = requirements.Requirement(item).name
        except requirements.InvalidRequirement:
            raise MetadataError(
                "invalid_metadata", f"Invalid package dependency declaration: {item!r}"
            ) from None
        if _packaging("utils").canonicalize_name(name) == "openenv":
            found.append(item)
    if len(found) > 1:
        raise MetadataError("invalid_metadata", "Multiple OpenEnv requirements need an explicit resolution")
    return found[0] if found else None
