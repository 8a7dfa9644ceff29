"""Echo's reference plan, named by ``openenv.yaml`` (``validation.capabilities.oracle``).

Echo has no task set: every episode asks the same thing, and the most it pays is for
the longest message its action takes (``EchoAction.message``: 65536 characters at 0.1
each, 6553.6: the top of the declared reward range). ``openenv validate --level
semantic`` (``semantic.oracle_max``) and ``openenv eval --policy oracle`` play it: a
reward rule or a length limit that drifts from the declared range fails there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: ``EchoAction.message``'s ``max_length``.
LONGEST_MESSAGE = 65536


def reference_plan(observation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One step: the longest message (what the first observation shows does not matter)."""
    return [{"message": "#" * LONGEST_MESSAGE}]
