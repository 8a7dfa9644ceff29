"""The served task set as JSON Schema: which splits, indices and task ids this server has.

A task set's splits, sizes and ids are data, but a client (or an OpenAPI fuzzer) can
only send what the document allows: so the document of a server with a task set says
exactly which values it holds, read once from the loaded task set when the document is
first built (the set is loaded at startup):

* the Task API's ``env_name`` path parameter: the env's name, case-insensitively (a
  pattern of ``[eE][cC]...``, as the server matches it);
* ``split``: an ``enum`` of the split names;
* ``POST /{env_name}/task``: one branch per non-empty split, ``index`` within
  ``0 .. n - 1`` of that split;
* a reset's ``task_id`` / ``index`` / ``split`` (an env whose ``reset_options_model``
  extends ``TaskOptions``): a task id of the split named (of any split without one), or
  an index within the split named (the default split without one).

So a ``400``/``404 TASK_NOT_FOUND`` answers only data the document marks invalid. A split
of more than ``MAX_IDS`` tasks leaves its ids out (``task_id`` is then any string there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Task ids listed per split at most (a dataset of millions stays out of the document).
MAX_IDS = 5000
_NULL = {"type": "null"}


@dataclass(frozen=True)
class TaskCatalog:
    """Split names, sizes and ids of one loaded task set."""

    env_name: str
    default_split: str
    sizes: dict[str, int]
    ids: dict[str, list[str] | None]  # None: more than MAX_IDS

    @classmethod
    def read(cls, env_name: str, tasks: Any) -> TaskCatalog:
        sizes = {split: tasks.num_tasks(split) for split in tasks.splits}
        ids = {
            split: [t.id for t in tasks.range(split)] if n <= MAX_IDS else None for split, n in sizes.items()
        }
        return cls(env_name, tasks.default_split if sizes else "", sizes, ids)

    # --- the Task API -------------------------------------------------------------------

    def env_name_parameter(self) -> dict[str, Any]:
        """``env_name`` as the server matches it: the name, any letter in either case."""
        pattern = "".join(
            f"[{c.lower()}{c.upper()}]" if c.lower() != c.upper() else re.escape(c) for c in self.env_name
        )
        return {"type": "string", "pattern": f"^{pattern}$"}

    def split_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.sizes)}

    def split_body(self) -> dict[str, Any]:
        """``{"split"}`` (``/tasks``, ``/num_tasks``)."""
        return {"type": "object", "required": ["split"], "properties": {"split": self.split_schema()}}

    def range_body(self) -> dict[str, Any]:
        """``{"split", "start"?, "stop"?}``: Python slice bounds, any integers."""
        bound = {"anyOf": [{"type": "integer"}, _NULL]}
        body = self.split_body()
        body["properties"] |= {"start": bound, "stop": bound}
        return body

    def task_body(self) -> dict[str, Any]:
        """``{"split", "index"}``: an index within the split named."""
        branches = [
            {
                "type": "object",
                "required": ["split", "index"],
                "properties": {"split": {"const": split}, "index": _index(n)},
            }
            for split, n in self.sizes.items() if n > 0
        ]
        if not branches:  # no task to ask for: the body can only be refused
            return {"not": {}}
        return branches[0] if len(branches) == 1 else {"anyOf": branches}

    # --- a reset's task options ---------------------------------------------------------

    def reset_branches(self) -> list[dict[str, Any]]:
        """``anyOf`` branches for a reset body whose options extend ``TaskOptions``: a
        task by id (in the split named, or any), or by index or seed within a split."""
        branches: list[dict[str, Any]] = []
        every: list[str] = []
        whole = True
        for split, ids in self.ids.items():
            if ids is None:
                whole = False
                continue
            every += ids
            if ids:
                branches.append(_by_id(ids, {"const": split}, required=["task_id", "split"]))
        if whole and every:
            branches.append(_by_id(sorted(set(every)), _NULL, required=["task_id"]))
        elif not whole:  # some split too large to list: any id, the server says if it is there
            branches.append({"required": ["task_id"], "properties": {"task_id": {"type": "string"}}})
        for split, n in self.sizes.items():
            if n > 0:
                branches.append({
                    "required": ["split"],
                    "properties": {"task_id": _NULL, "split": {"const": split}, "index": _maybe(_index(n))},
                })
        n = self.sizes.get(self.default_split, 0)
        if n > 0:
            branches.append({"properties": {"task_id": _NULL, "split": _NULL, "index": _maybe(_index(n))}})
        return branches


def _index(n: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "maximum": n - 1}


def _maybe(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, _NULL]}


def _by_id(ids: list[str], split: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"required": required, "properties": {"task_id": {"enum": ids}, "split": split}}


def constrain_reset(schema: dict[str, Any], catalog: TaskCatalog) -> dict[str, Any]:
    """A reset body's JSON Schema with the catalog's task choices added (``anyOf``)."""
    branches = catalog.reset_branches()
    out = dict(schema)
    out["anyOf"] = branches if branches else [{"not": {}}]
    return out
