"""``openenv.core.harness.training``: upstream's names for our capture traces (``openenv.capture``)."""

from ...capture import TrainingTrace, TrainingTurn

__all__ = ["TrainingTrace", "TrainingTurn"]
