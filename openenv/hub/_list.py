"""Finding env Spaces on the Hub: those ``openenv push`` tagged ``openenv``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._from_hub import space_url
from ._push import _api, _hub_call

#: The tag ``openenv push`` gives every Space it makes (README front-matter).
TAG = "openenv"


@dataclass(frozen=True, slots=True)
class HubEnv:
    """One env Space: its id, likes and tags; ``url`` is where it runs."""

    repo_id: str
    likes: int = 0
    tags: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return space_url(self.repo_id)


def list_envs(
    search: str | None = None,
    author: str | None = None,
    limit: int | None = 50,
    *,
    tag: str = TAG,
    endpoint: str | None = None,
    token: str | None = None,
) -> list[HubEnv]:
    """The Spaces tagged ``tag`` (``openenv``), the most liked first, at most ``limit``;
    ``search`` is a part of the id, ``author`` a user or an organisation. An unreachable
    Hub is a one-line ``HubError``."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")

    def fetch(endpoint: str | None = None) -> list[Any]:
        api = _api(endpoint, token)
        return list(api.list_spaces(filter=tag, search=search, author=author, sort="likes", limit=limit))

    spaces = _hub_call(f"listing Spaces tagged {tag!r}", fetch, endpoint=endpoint)
    return [
        HubEnv(space.id, int(getattr(space, "likes", 0) or 0), tuple(getattr(space, "tags", None) or ()))
        for space in spaces
    ]
