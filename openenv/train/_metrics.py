"""Step metrics: percentiles, the JSONL log and a one-line progress display (the plot: ``_plot.py``)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated ``q``-th percentile (0-100); ``nan`` for no values."""
    if not values:
        return math.nan
    s = sorted(values)
    k = (len(s) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def read_metrics(out: str | Path) -> list[dict[str, Any]]:
    path = Path(out) / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def keep_before(out: Path, step: int) -> None:
    """Drop logged rows at or after ``step`` (resuming from a checkpoint)."""
    rows = [r for r in read_metrics(out) if r["step"] < step]
    (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _clean(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def tensorboard_writer(folder: Path, start: int = 0) -> Any:
    """A TensorBoard ``SummaryWriter`` on ``folder``; ``None`` without the ``tensorboard``
    package (the JSONL log is the record; TensorBoard is a view of it). Resuming at step
    ``start > 0``, events an earlier run logged at or after ``start`` are purged."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(folder), purge_step=start or None)


class MetricsLog:
    """Appends one JSON object per step to ``DIR/metrics.jsonl``; TensorBoard scalars
    (one tag per numeric field, at the step) to ``DIR/tb/``; an optional progress line."""

    def __init__(
        self,
        out: Path,
        total: int,
        progress: bool,
        stream: TextIO | None = None,
        *,
        tensorboard: bool = True,
        start: int = 0,
    ) -> None:
        self.file = (out / "metrics.jsonl").open("a", encoding="utf-8")
        self.total = total
        self.progress = progress
        self.stream = stream or sys.stderr
        self.open_line = False  # a progress line without its newline yet
        self.tb: Any = tensorboard_writer(out / "tb", start) if tensorboard else None

    def write(self, row: dict[str, Any]) -> None:
        self.file.write(json.dumps({k: _clean(v) for k, v in row.items()}) + "\n")
        self.file.flush()
        if self.tb is not None:
            for key, value in row.items():
                if isinstance(value, int | float) and key != "step" and math.isfinite(value):
                    self.tb.add_scalar(key, value, row["step"])
        if self.progress:
            done = row["step"] + 1
            bar = "#" * (20 * done // self.total)
            self.stream.write(
                f"\rstep {done}/{self.total} [{bar:<20}] reward {row['reward_mean']:.3f} "
                f"episodes {row['episodes']} {row['step_time_s']:.2f}s/step"
            )
            self.open_line = done != self.total
            if not self.open_line:
                self.stream.write("\n")
            self.stream.flush()

    def close(self) -> None:
        if self.open_line:  # a run that stops early: what is printed next starts a line
            self.stream.write("\n")
            self.stream.flush()
        self.file.close()
        if self.tb is not None:
            self.tb.close()
