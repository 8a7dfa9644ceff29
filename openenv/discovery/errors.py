"""Upstream's ``openenv.discovery.errors``: the catalog error of our one tree."""

from .._exceptions import CatalogError as CatalogError
