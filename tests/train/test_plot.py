"""``openenv train plot``: the PNG has axes, tick labels, axis labels and a title.

The PNG is decoded here (it is written with filter 0 on every row) and each piece of
text is looked for, pixel for pixel, where the font draws it.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from openenv.cli import main as cli_main
from openenv.train._plot import TITLE, X_LABEL, Y_LABEL, nice_ticks, text_mask, tick_label


def decode(png: bytes) -> np.ndarray:
    """An RGB array of one of our PNGs (8-bit RGB, no interlace, filter 0 rows)."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pos, data, size = 8, b"", (0, 0)
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos : pos + 4])
        tag, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + n]
        assert struct.unpack(">I", png[pos + 8 + n : pos + 12 + n])[0] == zlib.crc32(tag + body)
        if tag == b"IHDR":
            size = struct.unpack(">II", body[:8])
            assert body[8:] == bytes([8, 2, 0, 0, 0])
        elif tag == b"IDAT":
            data += body
        pos += 12 + n
    w, h = size
    raw = np.frombuffer(zlib.decompress(data), dtype=np.uint8).reshape(h, 1 + 3 * w)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, 3)


def find(ink: np.ndarray, mask: np.ndarray) -> list[tuple[int, int]]:
    """Where ``mask`` (True = ink) appears exactly in ``ink``, as (row, column)."""
    windows = np.lib.stride_tricks.sliding_window_view(ink, mask.shape)
    hits = np.argwhere((windows == mask).all(axis=(2, 3)))
    return [(int(r), int(c)) for r, c in hits]


@pytest.fixture
def plotted(tmp_path: Path) -> tuple[np.ndarray, list[float], list[float]]:
    rows = [
        {"step": s, "reward_mean": 0.08 + 0.7 * (1 - math.exp(-s / 30)), "reward_std": 0.1}
        for s in range(100)
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli_main(["train", "plot", str(tmp_path)]) == 0
    image = decode((tmp_path / "reward.png").read_bytes())
    return image, nice_ticks(0, 99, integer=True), nice_ticks(-0.02, 0.8594)


def test_title_and_axis_labels(plotted: tuple[np.ndarray, list[float], list[float]]) -> None:
    image, _, _ = plotted
    ink = (image == 0).all(axis=2)  # black pixels
    h, w = ink.shape
    (r, c), *more = find(ink, np.array(text_mask(TITLE, 2)))
    assert not more
    assert r < 20
    below_title = [
        (r, c) for r, c in find(ink, np.array(text_mask(X_LABEL, 2))) if r >= 20
    ]  # the title says "step" too
    (r, c), *more = below_title
    assert not more
    assert r > h - 30
    assert abs(c + len(X_LABEL) * 6 - w / 2) < 60
    vertical = np.rot90(np.array(text_mask(Y_LABEL, 2)))  # read bottom to top
    (r, c), *more = find(ink, vertical)
    assert not more
    assert c < 30


def test_ticks_and_their_labels(plotted: tuple[np.ndarray, list[float], list[float]]) -> None:
    image, xticks, yticks = plotted
    assert xticks == [0, 20, 40, 60, 80]
    assert [tick_label(v, yticks) for v in yticks] == ["0", "0.2", "0.4", "0.6", "0.8"]
    ink = (image == 0).all(axis=2)
    h, w = ink.shape
    axis_row = max(range(h), key=lambda y: int(ink[y].sum()))  # the x axis: the longest black row
    axis_col = max(range(w), key=lambda x: int(ink[:, x].sum()))  # the y axis
    assert ink[axis_row, axis_col:].sum() > w * 0.8
    for label in ("0", "20", "40", "60", "80"):
        hits = [(r, c) for r, c in find(ink, np.array(text_mask(label))) if r > axis_row]
        assert hits, label
    label_rows = []
    for label in ("0.2", "0.4", "0.6", "0.8"):
        hits = [(r, c) for r, c in find(ink, np.array(text_mask(label))) if c < axis_col]
        assert len(hits) == 1, label
        label_rows.append(hits[0][0])
        assert ink[hits[0][0] + 3, axis_col - 4 : axis_col].all()  # its tick mark, level with it
    assert label_rows == sorted(label_rows, reverse=True)  # higher values higher up
    below_axis = ink[axis_row + 1 : axis_row + 5, axis_col:]
    assert (below_axis.sum(axis=0) == 4).sum() >= 5  # the x tick marks


def test_a_single_step_and_negative_rewards_plot(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text(
        json.dumps({"step": 0, "reward_mean": -0.5, "reward_std": 0.2}) + "\n"
    )
    assert cli_main(["train", "plot", str(tmp_path), "-o", str(tmp_path / "p.png")]) == 0
    ink = (decode((tmp_path / "p.png").read_bytes()) == 0).all(axis=2)
    assert find(ink, np.array(text_mask(TITLE, 2)))
