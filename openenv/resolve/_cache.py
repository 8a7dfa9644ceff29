"""The discovery cache: one JSON file per user, trusted only when it is the user's own.

Cached entries name modules that discovery later imports, so a file another user could
have written (another owner, group/world-writable, a symlink) is ignored, never read.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from ._info import EnvironmentInfo

_FIELDS = frozenset(f.name for f in fields(EnvironmentInfo))


def default_cache_file() -> Path:
    """``$XDG_CACHE_HOME/openenv/discovery_cache.json`` (an absolute ``XDG_CACHE_HOME``
    only), else under ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "openenv" / "discovery_cache.json"


def _trusted(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    shared = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return stat.S_ISREG(info.st_mode) and mine and not shared


def load_cache(path: Path) -> dict[str, EnvironmentInfo] | None:
    """The cached envs by key, or None (no file, not trusted, or not a valid cache)."""
    if not _trusted(path):
        return None
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        return {key: EnvironmentInfo(**_known(entry)) for key, entry in data.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _known(entry: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in entry.items() if name in _FIELDS}


def save_cache(path: Path, environments: dict[str, EnvironmentInfo]) -> bool:
    """Write ``environments`` to ``path`` atomically (mode 0600); False when it cannot."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".discovery-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({key: asdict(info) for key, info in environments.items()}, out, indent=2)
        os.replace(temp, path)
    except (OSError, TypeError, ValueError):
        return False
    return True
