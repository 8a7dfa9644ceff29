"""``openenv.core.harness.collect``: upstream's names for ``openenv.harness.collect``."""

from ....harness.collect import (
    METADATA_FILENAME,
    README_FILENAME,
    RESULTS_FILENAME,
    CollectResult,
    CollectRunner,
    EpisodeRecord,
    RolloutSerializer,
    build_dataset_readme,
    build_model_step,
    push_to_hf_hub,
)

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
