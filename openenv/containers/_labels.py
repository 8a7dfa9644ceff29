"""The OCI labels ``openenv build`` stamps on an env image, read from the env folder.

``org.opencontainers.image.title``, ``.version`` and ``.description`` are the folder's
``pyproject.toml`` ``[project]`` name, version and description. ``openenv validate
--level static`` judges the same dict (``static.oci_labels``), so what it checks is
what the build writes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

PREFIX = "org.opencontainers.image."
#: label key -> the ``[project]`` key it is read from
KEYS = {"title": "name", "version": "version", "description": "description"}


def oci_labels(env_dir: str | Path) -> dict[str, str]:
    """``{org.opencontainers.image.<key>: value}`` for each key ``[project]`` gives."""
    pyproject = Path(env_dir) / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}
    return {
        PREFIX + key: " ".join(str(project[field]).split())
        for key, field in KEYS.items()
        if isinstance(project, dict) and project.get(field)
    }
