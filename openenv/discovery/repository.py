"""Upstream's ``openenv.discovery.repository``: committed files at one commit, read by
``openenv.catalog._git.GitTree``."""

from .._exceptions import MetadataError as MetadataError
from ..catalog._git import GIT_TIMEOUT_S as GIT_TIMEOUT_SECONDS
from ..catalog._git import MAX_ENVIRONMENTS as MAX_ENVIRONMENTS
from ..catalog._git import MAX_METADATA_BYTES as MAX_METADATA_BYTES
from ..catalog._git import MAX_TREE_BYTES as MAX_TREE_BYTES
from ..catalog._git import GitTree as GitMetadataSource

__all__ = [
    "GIT_TIMEOUT_SECONDS",
    "MAX_ENVIRONMENTS",
    "MAX_METADATA_BYTES",
    "MAX_TREE_BYTES",
    "GitMetadataSource",
    "MetadataError",
]
