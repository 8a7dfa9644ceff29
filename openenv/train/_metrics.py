"""Step metrics: percentiles, the JSONL log, a one-line progress display and a PNG plot."""

from __future__ import annotations

import json
import math
import struct
import sys
import zlib
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
            if done == self.total:
                self.stream.write("\n")
            self.stream.flush()

    def close(self) -> None:
        self.file.close()
        if self.tb is not None:
            self.tb.close()


def plot_rewards(out: str | Path, png: str | Path | None = None, width: int = 640, height: int = 360) -> Path:
    """Draw ``reward_mean`` per step (with a +-std band) from ``DIR/metrics.jsonl`` to a PNG."""
    rows = [r for r in read_metrics(out) if r.get("reward_mean") is not None]
    if not rows:
        raise ValueError(f"no rewards in {Path(out) / 'metrics.jsonl'}")
    target = Path(png) if png else Path(out) / "reward.png"
    pix = bytearray(b"\xff" * (width * height * 3))
    margin = 30
    steps = [r["step"] for r in rows]
    lo = min(0.0, min(r["reward_mean"] - (r.get("reward_std") or 0) for r in rows))
    hi = max(1e-9 + lo, max(r["reward_mean"] + (r.get("reward_std") or 0) for r in rows))
    s0, s1 = min(steps), max(max(steps), min(steps) + 1)

    def xy(step: float, value: float) -> tuple[int, int]:
        x = margin + round((step - s0) / (s1 - s0) * (width - 2 * margin))
        y = height - margin - round((value - lo) / (hi - lo) * (height - 2 * margin))
        return x, y

    def put(x: int, y: int, rgb: tuple[int, int, int]) -> None:
        if 0 <= x < width and 0 <= y < height:
            pix[(y * width + x) * 3 : (y * width + x) * 3 + 3] = bytes(rgb)

    for x in range(margin, width - margin):  # axes
        put(x, height - margin, (0, 0, 0))
    for y in range(margin, height - margin):
        put(margin, y, (0, 0, 0))
    for r in rows:  # std band
        std = r.get("reward_std") or 0.0
        x, ya = xy(r["step"], r["reward_mean"] + std)
        _, yb = xy(r["step"], r["reward_mean"] - std)
        for y in range(ya, yb + 1):
            put(x, y, (190, 210, 240))
    prev = None
    for r in rows:  # mean line
        p = xy(r["step"], r["reward_mean"])
        if prev is not None:
            n = max(abs(p[0] - prev[0]), abs(p[1] - prev[1]), 1)
            for i in range(n + 1):
                put(prev[0] + (p[0] - prev[0]) * i // n, prev[1] + (p[1] - prev[1]) * i // n, (20, 60, 200))
        prev = p
    raw = b"".join(b"\x00" + bytes(pix[y * width * 3 : (y + 1) * width * 3]) for y in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png_bytes = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    target.write_bytes(png_bytes)
    return target
