"""Snapshots on disk: canonical JSON, a SHA-256 digest over it, bounded reads and
atomic writes. Nothing a snapshot references is fetched."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from .._exceptions import CatalogError
from ._declare import parse_json
from ._snapshot import CatalogSnapshot

MAX_CATALOG_BYTES = 16 * 1024 * 1024


def _canonical(data: object) -> bytes:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def catalog_digest(snapshot: CatalogSnapshot) -> str:
    """``sha256:`` of the snapshot's canonical JSON (sorted keys, no spaces), its
    ``digest`` field left out."""
    data = snapshot.model_dump(by_alias=True, exclude_none=True, exclude={"digest"}, mode="json")
    return "sha256:" + hashlib.sha256(_canonical(data)).hexdigest()


def with_digest(snapshot: CatalogSnapshot) -> CatalogSnapshot:
    """``snapshot`` with its digest computed."""
    return snapshot.model_copy(update={"digest": catalog_digest(snapshot)})


def require_complete(snapshot: CatalogSnapshot) -> None:
    """``CatalogError`` unless every env folder has an entry and the digest holds."""
    if not snapshot.complete:
        failed = sorted({i.path for i in snapshot.issues if i.severity == "error"})
        raise CatalogError(
            f"The configured catalog is incomplete (no entry for {', '.join(failed) or 'some folders'})"
        )
    if catalog_digest(snapshot) != snapshot.digest:
        raise CatalogError("Catalog content does not match its snapshot digest")


def read_catalog(path: str | Path) -> CatalogSnapshot:
    """The snapshot in ``path``, complete or not, its digest checked."""
    try:
        with Path(path).open("rb") as f:
            data = f.read(MAX_CATALOG_BYTES + 1)
    except OSError as exc:
        raise CatalogError(f"Cannot read the configured catalog {str(path)!r}: {exc.strerror}") from None
    if len(data) > MAX_CATALOG_BYTES:
        raise CatalogError(f"Catalog {str(path)!r} is over {MAX_CATALOG_BYTES} bytes")
    try:
        snapshot = CatalogSnapshot.model_validate(parse_json(data.decode("utf-8")))
    except UnicodeDecodeError:
        raise CatalogError(f"Catalog {str(path)!r} is not UTF-8") from None
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise CatalogError(f"Catalog does not match the supported profile: {where}: {err['msg']}") from None
    if catalog_digest(snapshot) != snapshot.digest:
        raise CatalogError("Catalog content does not match its snapshot digest")
    return snapshot


def load_catalog(path: str | Path) -> CatalogSnapshot:
    """The complete snapshot in ``path`` (``CatalogError`` for an incomplete one)."""
    snapshot = read_catalog(path)
    require_complete(snapshot)
    return snapshot


def write_catalog(snapshot: CatalogSnapshot, path: str | Path) -> None:
    """Write ``snapshot`` (complete or not) to ``path`` in one step: a reader sees the
    old file or the whole new one."""
    if catalog_digest(snapshot) != snapshot.digest:
        raise CatalogError("Cannot write a catalog with an invalid digest")
    data = snapshot.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    if len(text.encode()) > MAX_CATALOG_BYTES:
        raise CatalogError(f"Catalog is over {MAX_CATALOG_BYTES} bytes")
    target = Path(path)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise CatalogError(f"Cannot write the catalog to {str(path)!r}: {exc.strerror}") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
