"""``openenv.yaml``: the env manifest, upstream 0.10's keys plus ours.

Upstream reads ``spec_version``, ``name``, ``version``, ``type``, ``runtime``, ``app``
and ``port`` (so an upstream manifest loads); we add ``env`` (the ``module:Class``
served; optional, the pyproject entry point is what ``serve`` uses), ``description``,
``deterministic`` (validate then requires equal replies under a seed) and ``tags``
(copied to the Space's README front-matter by ``openenv push``). The ``validation:``
block (RFC 008, upstream's keys) is read by ``openenv validate --level``
(``_vmanifest``). Any other key, or a value of the wrong type, is an error naming it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._exceptions import ManifestError as ManifestError  # re-exported: its home before the one tree
from ._extras import require

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
    app: str = ""  # upstream's ``module:app``; kept, not used
    validation: dict[str, Any] | None = None  # RFC 008's block, parsed by ``validation_block``

    def to_yaml(self) -> str:
        yaml = require("yaml", extra="authoring", feature="openenv.yaml")
        data = {k: v for k, v in asdict(self).items() if not (k in ("app", "validation") and not v)}
        return str(yaml.safe_dump(data, sort_keys=False))

    def validation_block(self) -> Any:
        """The parsed ``validation:`` block (``ValidationBlock``), None when absent."""
        from ._vmanifest import parse_validation_block

        if self.validation is None:
            return None
        return parse_validation_block(self.validation, f"{MANIFEST} ({self.name})")


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
    unknown = sorted(str(k) for k in raw if k not in Manifest.__dataclass_fields__)
    if unknown:
        more = f" (+{len(unknown) - 1} more)" if len(unknown) > 1 else ""
        problems.append(f"unknown key {unknown[0]!r}{more}")
    typed = (("description", str), ("type", str), ("runtime", str), ("app", str), ("validation", dict))
    for key, kind in typed:
        if key in raw and raw[key] is not None and not isinstance(raw[key], kind):
            problems.append(f"{key} must be a {'mapping' if kind is dict else 'string'}")
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
    manifest = Manifest(**known)
    manifest.validation_block()  # a bad block fails here, naming its key
    return manifest
