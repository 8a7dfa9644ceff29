"""Collect rollouts into a dataset: ``CollectRunner`` drives episodes, ``RolloutSerializer``
appends them to ``results.jsonl`` (TRL ``SFTTrainer``-ready ``messages``), resumable;
``push_to_hf_hub`` uploads the folder as a Hub dataset."""

from ._hub import README_FILENAME, build_dataset_readme, push_to_hf_hub
from ._model_step import build_model_step
from ._record import METADATA_FILENAME, RESULTS_FILENAME, EpisodeRecord, RolloutSerializer
from ._runner import CollectResult, CollectRunner

__all__ = [
    "METADATA_FILENAME",
    "README_FILENAME",
    "RESULTS_FILENAME",
    "CollectResult",
    "CollectRunner",
    "EpisodeRecord",
    "RolloutSerializer",
    "build_dataset_readme",
    "build_model_step",
    "push_to_hf_hub",
]
