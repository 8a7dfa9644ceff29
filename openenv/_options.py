"""Upstream OpenEnv's options that ours lacks: accepted at their defaults, refused otherwise."""

from __future__ import annotations

from typing import Any

__all__ = ["upstream_defaults_only"]


def upstream_defaults_only(owner: str, **given: tuple[Any, Any]) -> dict[str, Any]:
    """``{}`` when every ``name=(value, upstream_default)`` is at its default.

    Otherwise a ``ValueError`` naming the first argument set, so an upstream caller
    learns at construction which option is not provided here rather than having it ignored.
    """
    for name, (value, default) in given.items():
        if value != default:
            raise ValueError(
                f"{owner}({name}={value!r}) is upstream OpenEnv's option, not provided here; "
                f"leave it at its default ({default!r})"
            )
    return {}
