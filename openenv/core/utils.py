"""Small helpers upstream env code imports from ``openenv.core.utils``: ours, renamed."""

from __future__ import annotations

import functools

from .._aio import run_sync
from .._space import space_subdomain as hf_space_subdomain
from ..client._base import ws_url

__all__ = ["convert_to_ws_url", "hf_space_subdomain", "run_async_safely"]

#: ``http(s)://`` -> ``ws(s)://``, no scheme -> ``ws://``; no path added.
convert_to_ws_url = functools.partial(ws_url, path="")
#: Run a coroutine from sync code; inside a running loop, on a fresh loop in a thread.
run_async_safely = functools.partial(run_sync, in_thread=True)
