"""Clients: ``EnvClient`` (blocking) and ``AsyncEnvClient`` (asyncio), one model layer."""

from ._async import AsyncEnvClient
from ._base import BaseEnvClient, ws_url
from ._sync import EnvClient

__all__ = ["AsyncEnvClient", "BaseEnvClient", "EnvClient", "ws_url"]
