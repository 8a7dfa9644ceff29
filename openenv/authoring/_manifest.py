"""``openenv.yaml``: the env manifest, upstream 0.10's keys plus ours.

Upstream reads ``spec_version``, ``name``, ``version``, ``type``, ``runtime``, ``app``
and ``port`` (so an upstream manifest loads); we add ``env`` (the ``module:Class``
served; optional, the pyproject entry point is what ``serve`` uses), ``description``,
``deterministic`` (validate then requires equal replies under a seed) and ``tags``
(copied to the Space's README front-matter by ``openenv push``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._exceptions import ManifestError as ManifestError  # re-exported: its home before the one tree
from .._extras import require

MANIFEST = "openenv.yaml"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(slots=True)
class Manifest:
    name: str
    env: str = ""  # optional: the pyproject entry point names what is served
    version: str = "0.1.0"
    description: str = ""
    deterministic: bool = False
    port: int = 8000
    tags: list[str] = field(default_factory=list)
    spec_version: int = 1
    type: str = "space"
    runtime: str = "openenv"

    def to_yaml(self) -> str:
        yaml = require("yaml", extra="authoring", feature="openenv.yaml")
        return str(yaml.safe_dump(asdict(self), sort_keys=False))


def load_manifest(folder: str | Path) -> Manifest:
    """Read and check ``<folder>/openenv.yaml``; ``ManifestError`` says what is wrong."""
    yaml = require("yaml", extra="authoring", feature="openenv.yaml")
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise ManifestError(f"{path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ManifestError(f"{path} must hold a mapping")
    return _from_mapping(raw, path)


def _from_mapping(raw: dict[str, Any], path: Path) -> Manifest:
    problems = []
    name = raw.get("name")
    if not (isinstance(name, str) and _NAME.match(name)):
        problems.append(f"name {name!r} must be a lowercase identifier")
    env = raw.get("env", "")
    if not (isinstance(env, str) and (env == "" or ":" in env)):
        problems.append(f"env {env!r} must be 'module:Class'")
    port = raw.get("port", 8000)
    if not (isinstance(port, int) and 0 < port < 65536):
        problems.append(f"port {port!r} must be a TCP port")
    tags = raw.get("tags", [])
    if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        problems.append("tags must be a list of strings")
    if not isinstance(raw.get("deterministic", False), bool):
        problems.append("deterministic must be true or false")
    if problems:
        raise ManifestError(f"{path}: " + "; ".join(problems))
    known = {k: raw[k] for k in Manifest.__dataclass_fields__ if k in raw}
    known["version"] = str(known.get("version", "0.1.0"))
    known["description"] = str(known.get("description") or "")
    return Manifest(**known)
