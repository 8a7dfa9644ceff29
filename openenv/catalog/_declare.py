"""What an env folder declares about itself, read from its committed files: the
manifest (``openenv.yaml``, through ``openenv._manifest``, ``validation:`` block
included), an optional ``discovery.json``, its pyproject's ``[project]`` table and its
README's front-matter. Nothing is imported or run."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from .._exceptions import CatalogError, ManifestError, MetadataError
from .._extras import require
from .._manifest import Manifest, _from_mapping
from ._card import SIMULATION_CONTROLS, NonEmpty, ProfileModel, RelativePath, RepresentativeQueries
from ._git import GitTree
from ._spdx import license_expression


class ToolDeclaration(ProfileModel):
    """Tools offered to the agent: their protocol, names, and the file that defines them."""

    protocol: NonEmpty
    names: list[NonEmpty] = Field(min_length=1, max_length=256)
    source: RelativePath

    @field_validator("names")
    @classmethod
    def _agent_tools_only(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("tool declarations must not contain duplicate names")
        if any(n.casefold() in SIMULATION_CONTROLS for n in value):
            raise ValueError("simulation controls cannot be agent tools")
        return value


class DiscoveryDeclaration(ProfileModel):
    """``<env>/discovery.json``: what the env's author says for the catalog, over what
    the other files say."""

    description: NonEmpty | None = None
    tags: list[NonEmpty] = Field(default_factory=list)
    representative_queries: RepresentativeQueries = Field(default_factory=list)
    license: NonEmpty | None = None
    license_source: RelativePath | None = None
    artifact_availability: Literal["resolvable", "external", "unknown"] = "resolvable"
    agent_tools: ToolDeclaration | None = None

    @field_validator("license")
    @classmethod
    def _spdx(cls, value: str | None) -> str | None:
        return None if value is None else license_expression(value)


def parse_json(text: str) -> Any:
    """JSON with no repeated keys and no NaN or Infinity; ``CatalogError`` otherwise."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise CatalogError(f"JSON repeats the key {key!r}")
            out[key] = value
        return out

    def constant(name: str) -> Any:
        raise CatalogError(f"JSON holds {name}, not a finite number")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CatalogError(f"Invalid catalog JSON: {exc}") from None


def yaml_mapping(text: str, path: str) -> dict[str, Any]:
    """A YAML mapping whose keys are strings, each once; ``MetadataError`` otherwise."""
    yaml = require("yaml", extra="authoring", feature="openenv catalog")

    class Loader(yaml.SafeLoader):  # type: ignore[name-defined,misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            if not isinstance(node, yaml.MappingNode):
                raise yaml.constructor.ConstructorError(None, None, "expected a mapping", node.start_mark)
            seen: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str) or key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is repeated or not a string", key_node.start_mark
                    )
                seen[key] = self.construct_object(value_node, deep=deep)
            return seen

    try:
        value = yaml.load(text, Loader=Loader)  # a SafeLoader subclass
    except (yaml.YAMLError, RecursionError) as exc:
        raise MetadataError(
            "invalid_metadata", f"Invalid YAML metadata: {path}: {_first_line(exc)}"
        ) from None
    if not isinstance(value, dict):
        raise MetadataError("invalid_metadata", f"Metadata must be a mapping: {path}")
    return value


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def manifest(tree: GitTree, folder: str) -> tuple[Manifest, dict[str, Any]]:
    """The folder's manifest checked by our parser (unknown keys, wrong types and a bad
    ``validation:`` block are errors naming the key), and its raw mapping."""
    path = f"{folder}/openenv.yaml"
    raw = yaml_mapping(tree.read(path, required=True) or "", path)
    try:
        return _from_mapping(raw, Path(path)), raw
    except ManifestError as exc:
        raise MetadataError("invalid_metadata", str(exc)) from None


def project(tree: GitTree, path: str) -> dict[str, Any]:
    """The ``[project]`` table of a committed pyproject.toml ({} when there is none)."""
    text = tree.read(path)
    if text is None:
        return {}
    try:
        table = tomllib.loads(text).get("project", {})
    except tomllib.TOMLDecodeError as exc:
        raise MetadataError("invalid_metadata", f"Invalid package metadata: {path}: {exc}") from None
    if not isinstance(table, dict):
        raise MetadataError("invalid_metadata", f"Project metadata must be a mapping: {path}")
    return table


def front_matter(tree: GitTree, path: str) -> dict[str, Any]:
    """A README's YAML front-matter (between its first two ``---`` lines), {} without."""
    text = tree.read(path)
    if text is None or not text.startswith(("---\n", "---\r")):
        return {}
    lines = text.splitlines()
    if "---" not in lines[1:]:
        raise MetadataError("invalid_metadata", f"Unclosed README frontmatter: {path}")
    end = lines.index("---", 1)
    return yaml_mapping("\n".join(lines[1:end]), path)


def declaration(tree: GitTree, path: str) -> DiscoveryDeclaration:
    """``discovery.json`` (an empty declaration when absent)."""
    text = tree.read(path)
    if text is None:
        return DiscoveryDeclaration()
    try:
        return DiscoveryDeclaration.model_validate(parse_json(text))
    except CatalogError as exc:
        raise MetadataError("invalid_metadata", f"Invalid discovery declaration: {path}: {exc}") from None
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise MetadataError("invalid_metadata", f"{path}: {where}: {err['msg']}") from None
