"""Harbor's task digests: computed as Harbor computes them, written into a ``dataset.toml``,
checked when a dataset is served.

A Harbor dataset manifest pins each task by content: ``[[tasks]] name = "org/task"``,
``digest = "sha256:<hex>"``. The digest of a task folder is SHA-256 over one line per
file, ``<path>\\0<sha256 of the file>\\n``, the files sorted by their path (POSIX,
relative to the folder): ``task.toml``, ``instruction.md``, ``README.md`` and
``trajectory.json`` where present, and every file under ``environment/``, ``tests/``,
``solution/`` and ``steps/`` (a symlinked folder is not entered; a symlinked file counts
with its target's bytes), less the ignored: what the task's ``.gitignore`` names, or
without one Harbor's defaults (``__pycache__/``, ``*.pyc``, ``.DS_Store``, ``*.swp``,
``*.swo``, ``*~``), and ``.harborignore`` files. A ``.harborignore`` with rules in it is
refused (``DigestError``): those rules are Harbor's alone.

``task_digest(folder)``; ``pin_mismatch(folder, digest)`` (why a pinned digest does not
hold, or None); ``write_digests(dataset)`` (each listed task's digest written into its
``dataset.toml``, as ``harbor sync`` does). From a shell::

    python -m terminal_env.harbor_digest mydataset/           # write the digests
    python -m terminal_env.harbor_digest --check mydataset/   # exit 1 when one differs
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["DigestError", "main", "pin_mismatch", "task_digest", "write_digests"]

_SINGLE = ("task.toml", "instruction.md", "README.md", "trajectory.json")
_TREES = ("environment", "tests", "solution", "steps")
_DEFAULT_IGNORES = ("__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~")
_PINNED = re.compile(r"sha256:[0-9a-f]{64}")
MANIFEST = "dataset.toml"


class DigestError(ValueError):
    """A task's digest cannot be computed here, or a manifest cannot be written."""


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _walk(folder: Path) -> list[Path]:
    """Every entry under ``folder`` (sorted per level; symlinked folders not entered)."""
    out: list[Path] = []
    for path in sorted(folder.iterdir()):
        out.append(path)
        if path.is_dir() and not path.is_symlink():
            out.extend(_walk(path))
    return out


def _default_ignored(rel: str) -> bool:
    parts = rel.split("/")
    for i, part in enumerate(parts):
        if part == "__pycache__" and i < len(parts) - 1:
            return True
        if any(fnmatch.fnmatchcase(part, p) for p in _DEFAULT_IGNORES if not p.endswith("/")):
            return True
    return False


def _ignore_rule(folder: Path) -> Any:
    gitignore = folder / ".gitignore"
    if not gitignore.exists():
        return _default_ignored
    try:
        pathspec: Any = importlib.import_module("pathspec")
    except ImportError:
        raise DigestError(
            f"{folder.name}: its .gitignore is read with pathspec, not installed (pip install pathspec)"
        ) from None
    spec = pathspec.PathSpec.from_lines("gitignore", gitignore.read_text().splitlines())
    return spec.match_file


def _has_rules(path: Path) -> bool:
    lines = (line.strip() for line in path.read_text(errors="replace").splitlines())
    return any(line and not line.startswith("#") for line in lines)


def task_digest(folder: str | Path) -> str:
    """``sha256:<hex>``: the task folder's content digest, as Harbor computes it."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise DigestError(f"{folder}: not a task folder")
    files = [root / name for name in _SINGLE if (root / name).exists()]
    for tree in _TREES:
        if (root / tree).is_dir():
            for path in _walk(root / tree):
                if path.name == ".harborignore":
                    if path.is_file() and _has_rules(path):
                        rel = path.relative_to(root).as_posix()
                        raise DigestError(
                            f"{root.name}: {rel} has rules; only Harbor applies them "
                            "(its `harbor sync` writes this task's digest)"
                        )
                    continue
                if path.is_file():
                    files.append(path)
    ignored = _ignore_rule(root)
    rows = sorted(
        (rel, path) for path in files if not ignored(rel := path.relative_to(root).as_posix())
    )
    outer = hashlib.sha256()
    for rel, path in rows:
        outer.update(f"{rel}\0{_file_sha256(path)}\n".encode())
    return f"sha256:{outer.hexdigest()}"


def pin_mismatch(folder: Path, pinned: Any) -> str | None:
    """Why ``pinned`` (a manifest row's ``digest``; None: not pinned) does not hold for
    ``folder``, in one line; None when it holds."""
    if pinned is None:
        return None
    if not isinstance(pinned, str) or not _PINNED.fullmatch(pinned):
        return f"digest {pinned!r} is not 'sha256:' and 64 lowercase hex digits"
    try:
        actual = task_digest(folder)
    except (DigestError, OSError) as exc:
        return f"its digest cannot be checked here: {exc}"
    if actual == pinned:
        return None
    return (
        f"pinned to {pinned[:19]}..., its folder is {actual[:19]}...: changed since it was pinned "
        f"(`python -m terminal_env.harbor_digest {folder.parent}` writes the new digests)"
    )


_HEADER = re.compile(r"^\s*\[")
_NAME = re.compile(r'^\s*name\s*=\s*"([^"]*)"')
_DIGEST = re.compile(r'^(\s*digest\s*=\s*)"[^"]*"(.*)$')


def write_digests(dataset: str | Path) -> dict[str, tuple[str, str]]:
    """Each ``[[tasks]]`` row of ``dataset/dataset.toml`` whose folder is beside it
    given that folder's digest (the file's other lines kept as they are); returns
    ``{name: (old, new)}`` for the rows it changed."""
    folder = Path(dataset)
    path = folder / MANIFEST
    try:
        text = path.read_text()
        tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DigestError(f"{path}: {exc}") from None
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    changed: dict[str, tuple[str, str]] = {}
    row: dict[str, Any] | None = None  # the [[tasks]] table being read

    def finish() -> None:
        if row is None or row["name"] is None:
            return
        task = folder / row["name"].rpartition("/")[2]
        if not task.is_dir():
            return
        new = task_digest(task)
        if row["digest_at"] is not None:
            at = row["digest_at"]
            match = _DIGEST.match(out[at].rstrip("\n"))
            assert match is not None
            old = out[at].split('"')[1]
            out[at] = f'{match.group(1)}"{new}"{match.group(2)}\n'
        else:
            old = ""
            out.insert(row["name_at"] + 1, f'digest = "{new}"\n')
        if old != new:
            changed[row["name"]] = (old, new)

    for line in lines:
        if _HEADER.match(line):
            finish()
            row = {"name": None, "name_at": None, "digest_at": None} if line.strip() == "[[tasks]]" else None
        elif row is not None and row["name"] is None and (name := _NAME.match(line)):
            row["name"], row["name_at"] = name.group(1), len(out)
        elif row is not None and _DIGEST.match(line.rstrip("\n")):
            row["digest_at"] = len(out)
        out.append(line if line.endswith("\n") else line + "\n")
    finish()
    if changed:
        path.write_text("".join(out))
    return changed


def main(argv: list[str] | None = None) -> int:
    """``[--check] DATASET``: write (or only check) the digests of a dataset folder."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    rest = [a for a in args if a != "--check"]
    if len(rest) != 1:
        print("usage: python -m terminal_env.harbor_digest [--check] DATASET_FOLDER", file=sys.stderr)
        return 2
    folder = Path(rest[0])
    try:
        if check:
            rows = tomllib.loads((folder / MANIFEST).read_text()).get("tasks", [])
            bad = {
                str(r.get("name")): why
                for r in rows
                if isinstance(r, dict)
                and (folder / str(r.get("name", "")).rpartition("/")[2]).is_dir()
                and (why := pin_mismatch(folder / str(r["name"]).rpartition("/")[2], r.get("digest", "")))
            }
            for name, why in bad.items():
                print(f"{name}: {why}")
            return 1 if bad else 0
        for name, (old, new) in write_digests(folder).items():
            print(f"{name}: {old or '(none)'} -> {new}")
    except (OSError, ValueError) as exc:
        print(f"harbor_digest: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
