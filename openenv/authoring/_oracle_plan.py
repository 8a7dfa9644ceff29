"""The oracle's plan a manifest names (``capabilities.oracle``, ``form: script``,
``location: MODULE:FUNCTION`` or ``FILE.py:FUNCTION``), loaded from the validated folder
for ``openenv.policy``'s oracle: ``semantic.oracle_max`` then plays it on every task
(the plan says per task whether it has a solution)."""

from __future__ import annotations

from pathlib import Path

from .._exceptions import PolicyError
from .._vmanifest import ValidationBlock
from ..policy._oracle import declare_plan as load_declared
from ..policy._oracle import is_plan_location, plan_for
from ._checks import Context
from ._semantic_replay import served_folder


def declare_plan(ctx: Context, block: ValidationBlock | None) -> tuple[str | None, str | None]:
    """Where ``capabilities.oracle`` names a plan (``MODULE:FUNCTION``, ``FILE.py:FUNCTION``),
    load it from the validated folder for the oracle (``openenv.policy``'s
    ``declare_plan``); a server validated by URL uses the one its installed package's
    manifest names. Returns the plan's location (None: none declared), and why it did not load."""
    oracle = block.capabilities.oracle if block is not None else None
    if oracle is None or not is_plan_location(oracle.location):
        return None, None
    name = str(ctx.metadata.get("name") or "")
    target = served_folder(ctx)
    try:
        if target is not None and Path(target).is_dir():
            load_declared(name, oracle.location, Path(target).resolve())
        elif plan_for(name) is None:
            return (
                oracle.location,
                f"capabilities.oracle names {oracle.location}, which is not installed here",
            )
    except PolicyError as exc:
        return oracle.location, str(exc)
    return oracle.location, None
