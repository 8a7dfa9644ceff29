"""The Environment Card: what a catalog says about one env at one commit (RFC 011's
0.1-draft profile, field for field as upstream OpenEnv 0.10 writes it, so a card made
by either tool loads in the other).

A card declares; it proves nothing: the owner is the repository's owner, the license is
what the files say, and nothing here has been run.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Final, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from ._spdx import license_expression, openenv_requirement

PROFILE_VERSION: Final = "0.1-draft"
ENVIRONMENT_MEDIA_TYPE: Final = "application/vnd.openenv.environment-card+json"
ARD_CONTEXT: Final = "https://agenticresourcediscovery.org/context/v1"
#: The orchestrator's controls: never an agent's tool or capability.
SIMULATION_CONTROLS = frozenset({"reset", "step", "state", "get_state"})

NonEmpty = Annotated[str, StringConstraints(min_length=1, max_length=8192, pattern=r"\S")]
#: Either none, or 2 to 5 example queries.
RepresentativeQueries = (
    Annotated[list[NonEmpty], Field(max_length=0)]
    | Annotated[list[NonEmpty], Field(min_length=2, max_length=5)]
)
#: A full SHA-1 or SHA-256 commit id: a branch or tag name is not a pin.
Revision = Annotated[str, StringConstraints(pattern=r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")]
Publisher = Annotated[
    str,
    StringConstraints(
        min_length=3,
        max_length=253,
        pattern=r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}$",
    ),
]

_CONTROL = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
_BAD = re.compile(f"[{_CONTROL}]")
# One path component other than "." and "..", without lookaround (some JSON Schema
# engines have none): it starts with a non-dot, or with one dot and a non-dot, or with
# two dots and anything more.
_PART = rf"(?:[^./\\{_CONTROL}][^/\\{_CONTROL}]*|\.[^./\\{_CONTROL}][^/\\{_CONTROL}]*|\.\.[^/\\{_CONTROL}]+)"


def relative_path(value: str) -> str:
    """``value`` if it is ``.`` or a normalized POSIX path inside the repository."""
    if value == ".":
        return value
    parts = value.split("/")
    if (
        not value
        or _BAD.search(value)
        or "\\" in value
        or PurePosixPath(value).is_absolute()
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise ValueError("path must be a normalized repository-relative POSIX path")
    return value


RelativePath = Annotated[
    NonEmpty,
    AfterValidator(relative_path),
    Field(
        json_schema_extra={
            "allOf": [
                {"pattern": rf"^(?:\.|{_PART}(?:/{_PART})*)$"},
                {"not": {"pattern": f"[{_CONTROL}]"}},
            ]
        }
    ),
]


def github_repository(uri: str) -> str:
    """``owner/name`` of ``https://github.com/owner/name.git`` (no credentials, query,
    fragment or escapes); ``ValueError`` for anything else."""
    parts = urlsplit(uri)
    if (
        parts.scheme != "https"
        or parts.netloc.lower() != "github.com"
        or parts.query
        or parts.fragment
        or "%" in parts.path
        or not parts.path.endswith(".git")
    ):
        raise ValueError("repository_uri must be a credential-free GitHub HTTPS Git URI")
    repo = parts.path[1:-4]
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        raise ValueError("repository_uri must identify an owner and repository")
    if any(p in (".", "..") for p in repo.split("/")):
        raise ValueError("repository_uri contains an invalid repository component")
    return repo


def metadata_url(value: str) -> str:
    """``value`` if it is an HTTPS URL with a host and no user or password."""
    parts = urlsplit(value)
    if (
        parts.scheme != "https"
        or not parts.hostname
        or parts.username is not None
        or (parts.password is not None or "\\" in parts.netloc)
    ):
        raise ValueError("metadata references must be credential-free HTTPS URLs")
    return value


MetadataURL = Annotated[NonEmpty, AfterValidator(metadata_url)]


class ProfileModel(BaseModel):
    """Strict, frozen, no unknown keys, no NaN: the base of every catalog record."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, populate_by_name=True, allow_inf_nan=False
    )


class Owner(ProfileModel):
    """Who declares the source (its repository's owner); not a verified author."""

    authority: NonEmpty
    id: NonEmpty


class RepositorySource(ProfileModel):
    """A GitHub repository at one commit."""

    provider: Literal["github"]
    id: NonEmpty
    uri: NonEmpty
    revision: Revision

    @model_validator(mode="after")
    def _id_is_the_uri(self) -> RepositorySource:
        if github_repository(self.uri) != self.id:
            raise ValueError("source.id must match the repository URI")
        return self


class EnvironmentSource(RepositorySource):
    """One env folder of a repository at one commit."""

    path: RelativePath


class GitArtifact(ProfileModel):
    """Where the env can be had: the same folder, commit and repository as its source."""

    kind: Literal["git"]
    uri: NonEmpty
    path: RelativePath
    revision: Revision


class OrchestrationInterface(ProfileModel):
    """The env speaks the OpenEnv protocol (reset, step, state) to an orchestrator."""

    role: Literal["orchestration"]
    protocol: Literal["openenv"]


class AgentToolsInterface(ProfileModel):
    """Tools the env declares for the agent itself (e.g. over MCP), at the card's commit."""

    role: Literal["agent-tools"]
    protocol: NonEmpty
    status: Literal["declared"]
    source_revision: Revision


Interface = Annotated[OrchestrationInterface | AgentToolsInterface, Field(discriminator="role")]

_CARD_SCHEMA: JsonDict = {
    "$comment": (
        "The schema checks shape, paths and which fields go together; a full check also parses "
        "the URIs, the SPDX expression and the requirement (openenv.catalog does)."
    ),
    "allOf": [
        {
            "if": {
                "properties": {"artifact_availability": {"const": "resolvable"}},
                "required": ["artifact_availability"],
            },
            "then": {"properties": {"artifacts": {"minItems": 1}}, "required": ["artifacts"]},
            "else": {"properties": {"artifacts": {"maxItems": 0}}},
        },
        {
            "if": {"properties": {"license": {"const": "other"}}, "required": ["license"]},
            "then": {"properties": {"license_url": {"type": "string"}}, "required": ["license_url"]},
        },
    ],
}


class EnvironmentCard(ProfileModel):
    """What one env folder declares at one commit: name, description, owner, source,
    license, and the interfaces it offers."""

    model_config = ConfigDict(json_schema_extra=_CARD_SCHEMA)

    schema_version: Literal["0.1-draft"]
    name: NonEmpty
    description: NonEmpty
    owner: Owner | Literal["unknown"]
    source: EnvironmentSource
    artifact_availability: Literal["resolvable", "external", "unknown"]
    artifacts: list[GitArtifact] = Field(default_factory=list)
    license: NonEmpty
    license_url: MetadataURL | None = None
    interfaces: list[Interface] = Field(
        json_schema_extra={
            "contains": {
                "type": "object",
                "properties": {"role": {"const": "orchestration"}},
                "required": ["role"],
            },
            "minContains": 1,
            "maxContains": 1,
        }
    )
    manifest_spec_version: int | str | None = None
    framework_requirement: NonEmpty | None = None

    @field_validator("license")
    @classmethod
    def _spdx(cls, value: str) -> str:
        return license_expression(value)

    @field_validator("framework_requirement")
    @classmethod
    def _requirement(cls, value: str | None) -> str | None:
        return None if value is None else openenv_requirement(value)

    @model_validator(mode="after")
    def _claims_agree(self) -> EnvironmentCard:
        resolvable = self.artifact_availability == "resolvable"
        if resolvable and not self.artifacts:
            raise ValueError("resolvable records require an immutable artifact")
        if not resolvable and self.artifacts:
            raise ValueError("external or unknown availability must not claim artifacts")
        subject = (self.source.uri, self.source.path, self.source.revision)
        if any((a.uri, a.path, a.revision) != subject for a in self.artifacts):
            raise ValueError("artifact does not identify the card's source subject")
        if self.license == "other" and self.license_url is None:
            raise ValueError("an other license requires an authoritative reference")
        if sum(i.role == "orchestration" for i in self.interfaces) != 1:
            raise ValueError("exactly one orchestration descriptor is required")
        tools = [i for i in self.interfaces if isinstance(i, AgentToolsInterface)]
        if any(t.source_revision != self.source.revision for t in tools):
            raise ValueError("tool declaration must match source revision")
        if len({t.protocol for t in tools}) != len(tools):
            raise ValueError("duplicate agent-tools protocol declaration")
        return self
