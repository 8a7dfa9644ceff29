"""ATIF (Harbor's Agent Trajectory Interchange Format): read, written, merged with the
capture proxy's token ids (``terminal_env._rollout``; writing is ``openenv.eval``'s).

``load_atif(trial_dir)``: a Harbor trial folder's ``agent/trajectory.json`` (None if the
agent wrote none); ``write_atif(trajectory, path)``: an ``openenv eval`` trajectory as
an ATIF document; ``merge_into_atif(atif, document)``: the capture session
``document``'s sampled ids and logprobs on the agent steps (a copy; unchanged when the
two do not line up step by step).
"""

from __future__ import annotations

import importlib
from typing import Any

_rollout: Any = importlib.import_module("terminal_env._rollout")

load_atif = _rollout.load_atif
write_atif = _rollout.write_atif
merge_into_atif = _rollout.merge_into_atif

__all__ = ["load_atif", "merge_into_atif", "write_atif"]
