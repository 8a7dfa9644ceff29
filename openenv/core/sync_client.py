"""Upstream's ``SyncEnvClient``: the blocking view of our hook-based client."""

from ..client._hooks_sync import SyncHookEnvClient as SyncEnvClient

__all__ = ["SyncEnvClient"]
