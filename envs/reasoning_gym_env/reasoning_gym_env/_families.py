"""The Task API's view of the env: one task per reasoning-gym family (no ``datasets`` needed).

A task's ``id`` is the family's name, what a reset's ``family`` option takes; its ``data``
holds ``family`` and ``config_fields`` (the names ``config`` may set). Every family a reset
starts from its default config is a task; ``composite`` is not one: it mixes other families
and has no default mix (a reset names them: ``config={"datasets": [...]}``, see ``env``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from openenv.tasks import Rows, TaskSet

#: reasoning-gym's mix of other families: no question of its own, no default mix.
COMPOSITE = "composite"


class FamilyTaskSet(TaskSet):
    """Every family registered in the installed reasoning-gym but ``composite``, sorted, as
    split ``train``."""

    def __init__(self) -> None:
        super().__init__("reasoning-gym", default_split="train")

    def _read(self) -> dict[str, Any]:
        from reasoning_gym.factory import DATASETS  # type: ignore[import-untyped]

        rows = []
        for name in sorted(set(DATASETS) - {COMPOSITE}):
            config_class = DATASETS[name][1]
            fields = [f.name for f in dataclasses.fields(config_class) if f.name not in ("seed", "size")]
            rows.append({"id": name, "family": name, "config_fields": fields})
        return {"train": Rows(rows)}
