"""Upstream's ``openenv.discovery.metadata``: reading what an env folder declares, over
``openenv.catalog._declare`` (the manifest through our parser) and ``_spdx``."""

from ..catalog._declare import DiscoveryDeclaration as DiscoveryDeclaration
from ..catalog._declare import ToolDeclaration as ToolDeclaration
from ..catalog._declare import declaration as discovery_declaration
from ..catalog._declare import front_matter as readme_metadata
from ..catalog._declare import parse_json as parse_json
from ..catalog._declare import project as project_metadata
from ..catalog._declare import yaml_mapping as yaml_mapping
from ..catalog._spdx import framework_requirement as framework_requirement
from ..catalog._spdx import read_license as license_declaration
from .repository import GitMetadataSource as GitMetadataSource
from .repository import MetadataError as MetadataError

__all__ = [
    "DiscoveryDeclaration",
    "GitMetadataSource",
    "MetadataError",
    "ToolDeclaration",
    "discovery_declaration",
    "framework_requirement",
    "license_declaration",
    "parse_json",
    "project_metadata",
    "readme_metadata",
    "yaml_mapping",
]
