"""Files of a Git repository at one commit, read from the object store: never the work
tree, never an import of the env's code. Every read is bounded in size and time."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import quote

from .._exceptions import CatalogError, MetadataError
from ._card import github_repository, relative_path

MAX_METADATA_BYTES = 1024 * 1024
MAX_TREE_BYTES = 16 * 1024 * 1024
MAX_ENVIRONMENTS = 10_000
GIT_TIMEOUT_S = 30.0
MANIFEST = "openenv.yaml"


class GitTree:
    """The tracked files of ``repository`` at ``revision`` (resolved once to a commit id),
    and the env folders directly under ``root`` (those holding an ``openenv.yaml``)."""

    def __init__(self, repository: str | Path, uri: str, revision: str = "HEAD", root: str = "envs") -> None:
        try:
            self.repository_id = github_repository(uri)
            self.root = relative_path(root)
        except ValueError as exc:
            raise CatalogError(str(exc)) from None
        self.repository = Path(repository)
        self.uri = uri
        if not self.repository.is_dir():
            raise CatalogError(f"{self.repository} is not a folder")
        if revision.startswith("-"):
            raise CatalogError(f"revision {revision!r} is not a commit or ref")
        out = self._git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"], 256
        )
        if out is None:
            raise CatalogError(f"no commit {revision!r} in {self.repository} (is it a Git repository?)")
        self.revision = out.decode("ascii").strip()
        self.files = self._list()
        prefix = "" if self.root == "." else self.root + "/"
        if not any(p.startswith(prefix) for p in self.files):
            raise CatalogError(f"no folder {self.root!r} at {self.revision[:12]} in {self.repository}")
        self.environments = sorted(
            p.rsplit("/", 1)[0]
            for p in self.files
            if p.startswith(prefix) and p.endswith("/" + MANIFEST) and p[len(prefix) :].count("/") == 1
        )
        if len(self.environments) > MAX_ENVIRONMENTS:
            raise CatalogError(f"more than {MAX_ENVIRONMENTS} env folders under {self.root!r}")

    def _git(self, args: list[str], limit: int) -> bytes | None:
        """Git's stdout (at most ``limit`` bytes), None when it exits non-zero."""
        env = {
            **os.environ,
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_TERMINAL_PROMPT": "0",
        }
        env.pop("GIT_DIR", None)
        try:
            done = subprocess.run(
                ["git", "--no-pager", "-C", str(self.repository), *args],
                capture_output=True,
                env=env,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError:
            raise CatalogError("git is not installed (the catalog reads committed files with it)") from None
        except subprocess.TimeoutExpired:
            raise CatalogError(
                f"git {args[0]} took over {GIT_TIMEOUT_S:.0f} s in {self.repository}"
            ) from None
        if done.returncode != 0:
            return None
        if len(done.stdout) > limit:
            raise CatalogError(f"git {args[0]} output over {limit} bytes in {self.repository}")
        return done.stdout

    def _list(self) -> dict[str, tuple[str, str, int]]:
        """Every blob of the commit: path -> (mode, object id, size)."""
        out = self._git(["ls-tree", "-r", "-l", "-z", "--full-tree", self.revision], MAX_TREE_BYTES)
        if out is None:
            raise CatalogError(f"cannot list the files of {self.revision[:12]} in {self.repository}")
        files = {}
        for row in out.split(b"\x00"):
            if not row:
                continue
            meta, name = row.split(b"\t", 1)
            mode, kind, oid, size = meta.decode("ascii").split()
            if kind != "blob":
                continue
            try:
                files[name.decode("utf-8")] = (mode, oid, int(size))
            except UnicodeDecodeError:
                raise CatalogError("Repository metadata paths must be UTF-8") from None
        return files

    def read(self, path: str, *, required: bool = False) -> str | None:
        """The text of ``path`` at the commit; None when absent and not ``required``."""
        relative_path(path)
        item = self.files.get(path)
        if item is None:
            if required:
                raise MetadataError("missing_metadata", f"Required metadata is absent: {path}")
            return None
        mode, oid, size = item
        if mode == "120000":
            raise MetadataError("symlink_metadata", f"Metadata must be a regular tracked file: {path}")
        if size > MAX_METADATA_BYTES:
            raise MetadataError("metadata_limit", f"Metadata file is too large: {path}")
        blob = self._git(["cat-file", "blob", oid], MAX_METADATA_BYTES)
        if blob is None:
            raise MetadataError("missing_metadata", f"Required metadata is absent: {path}")
        try:
            return blob.decode("utf-8")
        except UnicodeDecodeError:
            raise MetadataError("invalid_metadata", f"Metadata is not UTF-8: {path}") from None

    def url(self, path: str) -> str:
        """The GitHub page of ``path`` at the commit."""
        relative_path(path)
        return f"https://github.com/{self.repository_id}/blob/{self.revision}/{quote(path, safe='/')}"
