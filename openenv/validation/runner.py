"""Upstream's ``run_validation`` over ``openenv.authoring._levels.run_validation``."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from ..authoring._policy import Level

EXIT_PASS, EXIT_FAIL, EXIT_UNSUPPORTED, EXIT_INTERNAL = 0, 1, 2, 3


def run_validation(
    target: Path | str, *, max_level: Level = Level.SEMANTIC, skip_build: bool = False, **options: Any
) -> Any:
    """Validate the env folder ``target`` up to ``max_level`` (``skip_build``: no image is
    built either way); ``options`` go to ours (``tasks``, ``probe_tasks``, ``timeout_s``...)."""
    return importlib.import_module("openenv.authoring._levels").run_validation(
        target, max_level=max_level, **options
    )
