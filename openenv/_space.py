"""A Hugging Face Space's host name: ``org/My_Space`` -> ``org-my-space`` (``.hf.space``).

The Hub lowercases the repo id and makes every character outside ``[a-z0-9]`` a ``-``;
the same name is the Space's image at ``registry.hf.space``.
"""

from __future__ import annotations

import re

__all__ = ["space_subdomain", "space_url"]


def space_subdomain(repo_id: str) -> str:
    """``org/My_Space`` -> ``org-my-space``."""
    return re.sub(r"[^a-z0-9]", "-", repo_id.lower())


def space_url(repo_id: str) -> str:
    """``org/My_Space`` -> ``https://org-my-space.hf.space``, the running Space."""
    return f"https://{space_subdomain(repo_id)}.hf.space"
