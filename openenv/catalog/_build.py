"""``build_catalog``: a snapshot of every env folder of a repository at one commit.

Each folder becomes an entry, or an issue saying what is wrong with it; a broken folder
never stops the others. The snapshot is ``complete`` only when no folder failed.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .._exceptions import CatalogError, MetadataError
from . import _declare
from ._card import (
    PROFILE_VERSION,
    AgentToolsInterface,
    EnvironmentCard,
    EnvironmentSource,
    GitArtifact,
    OrchestrationInterface,
    Owner,
    Publisher,
    RepositorySource,
)
from ._git import GitTree
from ._snapshot import CatalogIssue, CatalogSnapshot, DiscoveryEntry, Inventory
from ._spdx import framework_requirement, read_license
from ._store import with_digest

_NAMESPACE = re.compile(r"[A-Za-z0-9._-]+")


def build_catalog(
    repository: str | Path,
    *,
    repository_uri: str,
    publisher: str,
    namespace: str = "openenv",
    revision: str = "HEAD",
    root: str = "envs",
) -> CatalogSnapshot:
    """Catalog the env folders directly under ``root`` of the Git ``repository`` at
    ``revision`` (resolved once to a commit; uncommitted files are not seen).

    ``repository_uri`` is where readers fetch it (``https://github.com/owner/name.git``);
    ``publisher`` a DNS name that publishes the catalog (declared, not verified);
    ``namespace`` the publisher's name for this catalog. Raises ``CatalogError`` when
    the repository, revision, root or a setting is unusable; a broken env folder is an
    issue in the snapshot, not an error.
    """
    try:
        TypeAdapter(Publisher).validate_python(publisher)
    except ValidationError:
        raise CatalogError(f"publisher {publisher!r} must be a DNS name such as example.org") from None
    if not _NAMESPACE.fullmatch(namespace):
        raise CatalogError(f"namespace {namespace!r} must be letters, digits, '.', '_' or '-'")
    tree = GitTree(repository, repository_uri, revision, root)
    root_project = _declare.project(tree, "pyproject.toml")
    entries, issues = [], []
    for folder in tree.environments:
        try:
            entry, warnings = _entry(tree, folder, publisher, namespace, root_project)
        except MetadataError as exc:
            issues.append(CatalogIssue(path=folder, code=exc.code, message=str(exc), severity="error"))
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in err["loc"])
            message = f"Metadata does not satisfy the declaration profile: {where}: {err['msg']}"
            issues.append(
                CatalogIssue(path=folder, code="invalid_metadata", message=message, severity="error")
            )
        except ValueError as exc:  # any other value a folder's files hold that the profile refuses
            message = f"{folder}: {' '.join(str(exc).split())[:300] or type(exc).__name__}"
            issues.append(
                CatalogIssue(path=folder, code="invalid_metadata", message=message, severity="error")
            )
        else:
            entries.append(entry)
            issues.extend(warnings)
    snapshot = CatalogSnapshot(
        publisher=publisher,
        source=RepositorySource(
            provider="github", id=tree.repository_id, uri=tree.uri, revision=tree.revision
        ),
        inventory=Inventory(root=tree.root, paths=tree.environments),
        entries=entries,
        issues=issues,
        complete=not any(i.severity == "error" for i in issues),
        digest="sha256:" + "0" * 64,
    )
    return with_digest(snapshot)


def _first(documents: list[tuple[dict[str, Any], str]], key: str) -> tuple[Any, str | None]:
    """The first document's value of ``key`` that is not None, and where it came from."""
    for document, origin in documents:
        if document.get(key) is not None:
            return document[key], f"{origin}{'.' if '#' in origin else '#'}{key}"
    return None, None


def _entry(
    tree: GitTree, folder: str, publisher: str, namespace: str, root_project: dict[str, Any]
) -> tuple[DiscoveryEntry, list[CatalogIssue]]:
    manifest_path, project_path = f"{folder}/openenv.yaml", f"{folder}/pyproject.toml"
    readme_path, declared_path = f"{folder}/README.md", f"{folder}/discovery.json"
    manifest, raw = _declare.manifest(tree, folder)
    project = _declare.project(tree, project_path)
    readme = _declare.front_matter(tree, readme_path)
    declared = _declare.declaration(tree, declared_path)
    name, name_from = _first([(raw, manifest_path), (project, project_path + "#project")], "name")
    description, description_from = _first(
        [
            (declared.model_dump(exclude_none=True), declared_path),
            (raw, manifest_path),
            (project, project_path + "#project"),
            (readme, readme_path),
        ],
        "description",
    )
    if not isinstance(name, str) or not name.strip():
        raise MetadataError("invalid_metadata", "Environment needs a declared name")
    if not isinstance(description, str) or not description.strip():
        raise MetadataError(
            "invalid_metadata",
            f"Environment needs an authored task description (description: in {manifest_path})",
        )
    license_, license_url, license_from, issues = _license(
        tree, folder, declared, project, readme, root_project
    )
    provenance: dict[str, Any] = {"name": name_from, "description": description_from, "source": tree.uri}
    if license_from is not None:
        provenance["license"] = license_from
    interfaces: list[OrchestrationInterface | AgentToolsInterface] = [
        OrchestrationInterface(role="orchestration", protocol="openenv")
    ]
    capabilities: list[str] = []
    if declared.agent_tools is not None:
        tools = declared.agent_tools
        if not tools.source.startswith(folder + "/"):
            raise MetadataError("invalid_metadata", "Agent-tool evidence must belong to the environment")
        tree.read(tools.source, required=True)
        interfaces.append(
            AgentToolsInterface(
                role="agent-tools", protocol=tools.protocol, status="declared", source_revision=tree.revision
            )
        )
        capabilities = tools.names
        provenance["agent_tools"] = tools.source
    tags = declared.tags or readme.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise MetadataError("invalid_metadata", f"Tags must be an array of strings: {readme_path}")
    if not tags and manifest.tags:  # ours: the manifest's tags when nothing else names any
        tags, provenance["tags"] = manifest.tags, manifest_path + "#tags"
    requirement = framework_requirement(project)
    if requirement is not None:
        provenance["framework_requirement"] = project_path + "#project.dependencies"
    if "spec_version" in raw:
        provenance["manifest_spec_version"] = manifest_path + "#spec_version"
    source = EnvironmentSource(
        provider="github", id=tree.repository_id, uri=tree.uri, path=folder, revision=tree.revision
    )
    artifacts = []
    if declared.artifact_availability == "resolvable":
        artifacts.append(GitArtifact(kind="git", uri=tree.uri, path=folder, revision=tree.revision))
    card = EnvironmentCard(
        schema_version=PROFILE_VERSION,
        name=name,
        description=description,
        owner=Owner(authority="github.com", id=tree.repository_id.split("/", 1)[0]),
        source=source,
        artifact_availability=declared.artifact_availability,
        artifacts=artifacts,
        license=license_,
        license_url=license_url,
        interfaces=interfaces,
        manifest_spec_version=raw.get("spec_version"),
        framework_requirement=requirement,
    )
    metadata: dict[str, Any] = {"provenance": provenance}
    block = manifest.validation_block()
    if block is not None:  # ours: what the env declares to `openenv validate --level`
        metadata["validation"] = block.model_dump(mode="json", exclude_none=True)
        provenance["validation"] = manifest_path + "#validation"
    locator = hashlib.sha256(f"{tree.uri}\n{folder}".encode()).hexdigest()
    entry = DiscoveryEntry(
        identifier=f"urn:air:{publisher}:{namespace}:{locator}:{tree.revision}",
        display_name=name,
        description=description,
        data=card,
        tags=sorted(set(tags)),
        capabilities=capabilities,
        representative_queries=declared.representative_queries,
        metadata=metadata,
    )
    return entry, issues


def _license(
    tree: GitTree,
    folder: str,
    declared: _declare.DiscoveryDeclaration,
    project: dict[str, Any],
    readme: dict[str, Any],
    root_project: dict[str, Any],
) -> tuple[str, str | None, str | None, list[CatalogIssue]]:
    """(expression, URL of the file that says it, that file, warnings), from the first of:
    discovery.json; the env's pyproject and README (when they disagree: ``unknown`` and a
    warning); the repository's pyproject (and its first ``license-files`` entry)."""
    if declared.license is not None:
        evidence = declared.license_source or f"{folder}/discovery.json"
        tree.read(evidence, required=True)
        url = None if declared.license == "unknown" else tree.url(evidence)
        return declared.license, url, evidence, []
    stated = [
        (read_license(project.get("license")), f"{folder}/pyproject.toml"),
        (read_license(readme.get("license")), f"{folder}/README.md"),
    ]
    known = [(lic, origin) for lic, origin in stated if lic is not None]
    ambiguous = len(known) > 1 and known[0][0].expression == "other" and known[0][0].text is None
    if len({lic for lic, _ in known}) > 1 or ambiguous:
        warning = CatalogIssue(
            path=folder,
            code="license_conflict",
            message=f"{folder}/pyproject.toml and {folder}/README.md name different licenses",
            severity="warning",
        )
        return "unknown", None, None, [warning]
    if known:
        first, origin = known[0]
        url = None if first.expression == "unknown" else tree.url(origin)
        return first.expression, url, origin, []
    stated_root = read_license(root_project.get("license"))
    if stated_root is None:
        return "unknown", None, None, []
    origin = "pyproject.toml"
    for name in root_project.get("license-files", []):
        if isinstance(name, str) and name in tree.files:
            tree.read(name, required=True)
            origin = name
            break
    expression = stated_root.expression
    return expression, None if expression == "unknown" else tree.url(origin), origin, []
