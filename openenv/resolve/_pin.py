"""A Space named with a pin (``org/name@revision``) for ``AutoEnv``: checked on the Hub
before anything is installed or connected to."""

from __future__ import annotations

from ._names import repo_id_of

__all__ = ["check_pin"]


def check_pin(name: str) -> None:
    """Nothing for an unpinned name. For ``org/name@rev``: a one-line ``HubError`` when
    the Space has no revision ``rev``, or when its live Space runs another commit (the
    package would be installed at ``rev`` and talk to other code). Needs the ``hub``
    extra (``huggingface_hub``) only when a pin is given."""
    repo_id = repo_id_of(name)
    if "@" not in repo_id:
        return
    from ..hub import resolve_hub_target

    resolve_hub_target(repo_id)
