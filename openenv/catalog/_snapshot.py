"""A catalog snapshot: every env folder of one repository at one commit, each an entry
(an Agentic Resource Discovery record holding its card) or an issue saying why not.

``complete`` is true only when no folder failed; the digest is the SHA-256 of the
snapshot's canonical JSON without the digest itself (``_store.digest``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, StringConstraints, model_validator

from ._card import (
    ARD_CONTEXT,
    ENVIRONMENT_MEDIA_TYPE,
    PROFILE_VERSION,
    SIMULATION_CONTROLS,
    EnvironmentCard,
    NonEmpty,
    ProfileModel,
    Publisher,
    RelativePath,
    RepositorySource,
    RepresentativeQueries,
)


class DiscoveryEntry(ProfileModel):
    """One env at one commit, as a discovery record: ``identifier`` is
    ``urn:air:<publisher>:<namespace>:<locator>:<revision>``."""

    context: Literal["https://agenticresourcediscovery.org/context/v1"] = Field(
        default=ARD_CONTEXT, alias="@context"
    )
    identifier: NonEmpty
    display_name: NonEmpty = Field(alias="displayName")
    type: Literal["application/vnd.openenv.environment-card+json"] = ENVIRONMENT_MEDIA_TYPE
    data: EnvironmentCard
    description: NonEmpty
    tags: list[NonEmpty] = Field(default_factory=list)
    capabilities: list[NonEmpty] = Field(default_factory=list)
    representative_queries: RepresentativeQueries = Field(default_factory=list, alias="representativeQueries")
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _pinned_and_honest(self) -> DiscoveryEntry:
        if not (
            self.identifier.startswith("urn:air:")
            and self.identifier.endswith(":" + self.data.source.revision)
        ):
            raise ValueError("identifier must name one immutable revision card")
        if any(c.casefold() in SIMULATION_CONTROLS for c in self.capabilities):
            raise ValueError("agent capabilities must not advertise simulation control")
        if self.capabilities and all(i.role != "agent-tools" for i in self.data.interfaces):
            raise ValueError("capabilities require an evidenced agent-tools declaration")
        return self


class Inventory(ProfileModel):
    """The folder searched (``root``) and the env folders found directly under it."""

    root: RelativePath
    paths: list[RelativePath]

    @model_validator(mode="after")
    def _children_of_root(self) -> Inventory:
        parent = "" if self.root == "." else self.root
        if any(p == "." or p.rpartition("/")[0] != parent for p in self.paths):
            raise ValueError("inventory paths must be direct children of its declared root")
        return self


class CatalogIssue(ProfileModel):
    """Why an env folder has no entry (``error``) or a weaker one (``warning``)."""

    path: RelativePath
    code: NonEmpty
    message: NonEmpty
    severity: Literal["warning", "error"]


class Generator(ProfileModel):
    """The producer format (upstream's name for it, so either tool reads the other's)."""

    name: Literal["openenv-git-catalog"] = "openenv-git-catalog"
    version: Literal["1"] = "1"


class CatalogSnapshot(ProfileModel):
    """Every env of one repository at one commit, accounted for."""

    schema_version: Literal["0.1-draft"] = PROFILE_VERSION
    publisher: Publisher
    source: RepositorySource
    generator: Generator = Field(default_factory=Generator)
    inventory: Inventory
    entries: list[DiscoveryEntry]
    issues: list[CatalogIssue] = Field(default_factory=list)
    complete: bool
    digest: Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]

    @model_validator(mode="after")
    def _accounts_for_every_folder(self) -> CatalogSnapshot:
        paths = self.inventory.paths
        if len(paths) != len(set(paths)):
            raise ValueError("inventory contains duplicate environment paths")
        pinned = (self.source.id, self.source.uri, self.source.revision)
        prefix = f"urn:air:{self.publisher}:"
        for entry in self.entries:
            src = entry.data.source
            if (src.id, src.uri, src.revision) != pinned:
                raise ValueError("entry source differs from the recorded inventory")
            if not entry.identifier.startswith(prefix):
                raise ValueError("entry publisher differs from the snapshot publisher")
        if len({e.identifier for e in self.entries}) != len(self.entries):
            raise ValueError("duplicate revision-card identifier")
        found = [e.data.source.path for e in self.entries]
        if len(found) != len(set(found)):
            raise ValueError("multiple cards describe one environment path")
        failed = {i.path for i in self.issues if i.severity == "error"}
        if failed & set(found) or failed | set(found) != set(paths):
            raise ValueError("inventory must account for every eligible environment")
        if self.complete != (not failed):
            raise ValueError("complete must reflect eligible-record failures")
        return self


class SearchMatch(ProfileModel):
    """An entry and how many of the query's words it holds, in percent."""

    entry: DiscoveryEntry
    score: Annotated[int, Field(ge=0, le=100)]


class SupersededEntry(ProfileModel):
    """The same env folder in two snapshots."""

    previous: DiscoveryEntry
    current: DiscoveryEntry


class CatalogChanges(ProfileModel):
    """Two snapshots of one repository compared, folder by folder: new folders, gone
    folders, folders at a new commit (superseded), and the same commit described
    differently (corrected)."""

    added: list[DiscoveryEntry]
    withdrawn: list[DiscoveryEntry]
    superseded: list[SupersededEntry]
    corrected: list[SupersededEntry]
