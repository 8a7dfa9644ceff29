"""A Hub id with a pin: ``owner/name@revision`` (a branch, a tag or a commit).

Split once where an id is taken (``from_hub``, ``openenv pull``, ``AutoEnv``); the
revision then goes to every Hub call. Imports nothing of ``huggingface_hub``.
"""

from __future__ import annotations

import re

from .._exceptions import HubError

__all__ = ["split_pin"]

#: What a git ref or a commit may be, as the Hub takes it in a URL path segment:
#: no spaces, no ``..``, no leading ``-``; ``/`` allowed (``refs/pr/1``).
_REVISION = re.compile(r"^[A-Za-z0-9_][\w./-]{0,254}$")


def split_pin(repo_id: str, revision: str | None = None) -> tuple[str, str | None]:
    """``"org/name@v1"`` -> ``("org/name", "v1")``; ``"org/name"`` -> ``("org/name", revision)``.

    A pin in the id and a different ``revision`` argument is a ``HubError``, as is an
    empty or malformed revision (``org/name@``)."""
    if not isinstance(repo_id, str) or "@" not in repo_id:
        return repo_id, _checked(revision) if revision is not None else None
    bare, _, pinned = repo_id.rpartition("@")
    _checked(pinned, repo_id)
    if revision is not None and revision != pinned:
        raise HubError(f"{repo_id!r} pins revision {pinned!r} but revision={revision!r} was also given")
    return bare, pinned


def _checked(revision: str, where: str | None = None) -> str:
    if not isinstance(revision, str) or not _REVISION.fullmatch(revision) or ".." in revision:
        said = f" in {where!r}" if where else ""
        raise HubError(f"{revision!r}{said} is not a revision: use a branch, a tag or a commit")
    return revision
