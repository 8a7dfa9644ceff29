"""Collect rollouts into a dataset: ``CollectRunner`` drives episodes, ``RolloutSerializer``
appends them to ``results.jsonl`` (TRL ``SFTTrainer``-ready ``messages``), resumable."""

from ._model_step import build_model_step
from ._record import METADATA_FILENAME, RESULTS_FILENAME, EpisodeRecord, RolloutSerializer
from ._runner import CollectResult, CollectRunner

__all__ = [
    "METADATA_FILENAME",
    "RESULTS_FILENAME",
    "CollectResult",
    "CollectRunner",
    "EpisodeRecord",
    "RolloutSerializer",
    "build_model_step",
]
