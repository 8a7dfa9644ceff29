"""Small helpers upstream env code imports from ``openenv.core.utils``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["convert_to_ws_url", "hf_space_subdomain", "run_async_safely"]


def run_async_safely(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, even when this thread runs a loop
    (then it runs on a fresh loop in a worker thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def convert_to_ws_url(url: str) -> str:
    """``http(s)://`` -> ``ws(s)://``; ``ws(s)://`` kept; no scheme -> ``ws://``.
    The trailing slash is dropped; no path is added."""
    url = url.rstrip("/")
    if url.startswith("http://"):
        return "ws://" + url[len("http://") :]
    if url.startswith("https://"):
        return "wss://" + url[len("https://") :]
    if url.startswith(("ws://", "wss://")):
        return url
    return "ws://" + url


def hf_space_subdomain(repo_id: str) -> str:
    """``org/My_Space`` -> ``org-my-space``: the Space's host name and image name at
    ``registry.hf.space`` (every character outside ``[a-z0-9]`` becomes ``-``)."""
    return re.sub(r"[^a-z0-9]", "-", repo_id.lower())
