"""The reward curve as a PNG: axes with ticks and labels, a title, no plotting library.

``plot_rewards(DIR)`` draws ``reward_mean`` per step from ``DIR/metrics.jsonl`` with
a +-1 std band. Text is drawn with a built-in 5x7 pixel font (lower case, digits and
a little punctuation; upper case is drawn in lower case, anything else as ``?``).
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: 5x7 glyphs: seven rows of five bits, top row first, as hex bytes.
_GLYPHS = {
    "0": "0e11131519110e",
    "1": "040c040404040e",
    "2": "0e11010204081f",
    "3": "1f02040201110e",
    "4": "02060a121f0202",
    "5": "1f101e0101110e",
    "6": "0608101e11110e",
    "7": "1f010204080808",
    "8": "0e11110e11110e",
    "9": "0e11110f01020c",
    "a": "00000e010f110f",
    "b": "1010161911111e",
    "c": "00000e1010110e",
    "d": "01010d1311110f",
    "e": "00000e111f100e",
    "f": "0609081c080808",
    "g": "000f11110f010e",
    "h": "10101619111111",
    "i": "04000c0404040e",
    "j": "0200060202120c",
    "k": "10101214181412",
    "l": "0c04040404040e",
    "m": "00001a15151111",
    "n": "00001619111111",
    "o": "00000e1111110e",
    "p": "00001e111e1010",
    "q": "00000d130f0101",
    "r": "00001619101010",
    "s": "00000e100e011e",
    "t": "08081c08080906",
    "u": "0000111111130d",
    "v": "00001111110a04",
    "w": "0000111115150a",
    "x": "0000110a040a11",
    "y": "000011110f010e",
    "z": "00001f0204081f",
    " ": "00000000000000",
    ".": "00000000000c0c",
    ",": "000000000c0408",
    "-": "0000000e000000",
    "+": "0004041f040400",
    "/": "00010204081000",
    ":": "000c0c000c0c00",
    "(": "02040808080402",
    ")": "08040202020408",
    "_": "0000000000001f",
    "=": "00001f001f0000",
    "%": "18190204081303",
    "?": "0e110102040004",
}
GLYPH_W, GLYPH_H = 5, 7

RGB = tuple[int, int, int]
INK: RGB = (0, 0, 0)
GRID: RGB = (225, 225, 225)
BAND: RGB = (190, 210, 240)
LINE: RGB = (20, 60, 200)

TITLE = "reward per step: mean (line), +-1 std (band)"
X_LABEL = "step"
Y_LABEL = "reward"


def glyph(ch: str) -> list[list[bool]]:
    """The 7 rows of 5 pixels of ``ch`` (``?`` for a character the font lacks)."""
    code = _GLYPHS.get(ch.lower(), _GLYPHS["?"])
    rows = [int(code[2 * r : 2 * r + 2], 16) for r in range(GLYPH_H)]
    return [[bool(row >> (GLYPH_W - 1 - c) & 1) for c in range(GLYPH_W)] for row in rows]


def text_mask(text: str, scale: int = 1) -> list[list[bool]]:
    """``text`` as rows of pixels: one pixel between glyphs, each pixel ``scale`` x ``scale``."""
    rows: list[list[bool]] = [[] for _ in range(GLYPH_H)]
    for i, ch in enumerate(text):
        g = glyph(ch)
        for r in range(GLYPH_H):
            rows[r] += ([False] if i else []) + g[r]
    return [[v for v in row for _ in range(scale)] for row in rows for _ in range(scale)]


def nice_ticks(lo: float, hi: float, target: int = 5, *, integer: bool = False) -> list[float]:
    """Round tick values covering ``[lo, hi]``: steps of 1, 2 or 5 times a power of ten."""
    span = max(hi - lo, 1e-12)
    raw = span / target
    base = 10.0 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 5, 10) if m * base >= raw)
    if integer:
        step = max(1.0, float(round(step)))
    first = math.ceil(lo / step - 1e-9) * step
    count = math.floor((hi - first) / step + 1e-9) + 1
    return [round(first + i * step, 12) for i in range(max(count, 0))]


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """``value`` with as many decimals as the tick spacing needs."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


@dataclass
class Canvas:
    """An RGB image in memory, written out as a PNG."""

    width: int
    height: int

    def __post_init__(self) -> None:
        self.pix = bytearray(b"\xff" * (self.width * self.height * 3))

    def put(self, x: int, y: int, rgb: RGB) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            i = (y * self.width + x) * 3
            self.pix[i : i + 3] = bytes(rgb)

    def line(self, a: tuple[int, int], b: tuple[int, int], rgb: RGB) -> None:
        n = max(abs(b[0] - a[0]), abs(b[1] - a[1]), 1)
        for i in range(n + 1):
            self.put(a[0] + (b[0] - a[0]) * i // n, a[1] + (b[1] - a[1]) * i // n, rgb)

    def text(self, x: int, y: int, text: str, *, scale: int = 1, vertical: bool = False) -> None:
        """Draw ``text`` with its top-left corner at (x, y); ``vertical`` reads bottom to top."""
        mask = text_mask(text, scale)
        for r, row in enumerate(mask):
            for c, on in enumerate(row):
                if on:
                    self.put(x + r, y + len(row) - 1 - c, INK) if vertical else self.put(x + c, y + r, INK)

    def png(self) -> bytes:
        w = self.width * 3
        raw = b"".join(b"\x00" + bytes(self.pix[y * w : (y + 1) * w]) for y in range(self.height))

        def chunk(tag: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
        return b"\x89PNG\r\n\x1a\n" + body


def text_width(text: str, scale: int = 1) -> int:
    return (len(text) * (GLYPH_W + 1) - 1) * scale if text else 0


def draw_rewards(rows: Sequence[dict[str, Any]], width: int = 640, height: int = 360) -> Canvas:
    """The plot of ``rows`` (metrics rows with ``reward_mean``) on a canvas."""
    left, right, top, bottom = 64, 24, 34, 44
    steps = [r["step"] for r in rows]
    lo = min(0.0, min(r["reward_mean"] - (r.get("reward_std") or 0) for r in rows))
    hi = max(1e-9 + lo, max(r["reward_mean"] + (r.get("reward_std") or 0) for r in rows))
    s0, s1 = min(steps), max(max(steps), min(steps) + 1)
    xticks = nice_ticks(s0, s1, integer=True)
    yticks = nice_ticks(lo, hi)
    c = Canvas(width, height)
    x_end, y_end = width - right, height - bottom

    def xy(step: float, value: float) -> tuple[int, int]:
        x = left + round((step - s0) / (s1 - s0) * (x_end - left))
        y = y_end - round((value - lo) / (hi - lo) * (y_end - top))
        return x, y

    for v in yticks:  # grid, tick marks and labels on the y axis
        _, y = xy(s0, v)
        c.line((left + 1, y), (x_end, y), GRID)
        c.line((left - 4, y), (left - 1, y), INK)
        label = tick_label(v, yticks)
        c.text(left - 7 - text_width(label), y - GLYPH_H // 2, label)
    for s in xticks:  # and on the x axis
        x, _ = xy(s, lo)
        c.line((x, y_end + 1), (x, y_end + 4), INK)
        label = tick_label(s, xticks)
        c.text(x - text_width(label) // 2, y_end + 8, label)
    band = [
        (
            xy(r["step"], r["reward_mean"] + (r.get("reward_std") or 0.0)),
            xy(r["step"], r["reward_mean"] - (r.get("reward_std") or 0.0)),
        )
        for r in rows
    ]
    for (a_hi, a_lo), (b_hi, b_lo) in itertools.pairwise(band or []):  # std band, filled between steps
        for x in range(a_hi[0], b_hi[0] + 1):
            t = (x - a_hi[0]) / max(b_hi[0] - a_hi[0], 1)
            y_hi, y_lo = a_hi[1] + t * (b_hi[1] - a_hi[1]), a_lo[1] + t * (b_lo[1] - a_lo[1])
            c.line((x, round(y_hi)), (x, round(y_lo)), BAND)
    if len(band) == 1:
        c.line(band[0][0], band[0][1], BAND)
    c.line((left, y_end), (x_end, y_end), INK)  # axes
    c.line((left, top), (left, y_end), INK)
    points = [xy(r["step"], r["reward_mean"]) for r in rows]
    for a, b in itertools.pairwise(points):  # mean line
        c.line(a, b, LINE)
    if len(points) == 1:
        c.put(*points[0], LINE)
    c.text((left + x_end - text_width(X_LABEL, 2)) // 2, height - 2 * GLYPH_H - 4, X_LABEL, scale=2)
    c.text(6, (top + y_end - text_width(Y_LABEL, 2)) // 2, Y_LABEL, scale=2, vertical=True)
    c.text((width - text_width(TITLE, 2)) // 2, 8, TITLE, scale=2)
    return c


def plot_rewards(out: str | Path, png: str | Path | None = None, width: int = 640, height: int = 360) -> Path:
    """Draw ``reward_mean`` per step (with a +-std band) from ``DIR/metrics.jsonl`` to a PNG."""
    from ._metrics import read_metrics

    rows = [r for r in read_metrics(out) if r.get("reward_mean") is not None]
    if not rows:
        raise ValueError(f"no rewards in {Path(out) / 'metrics.jsonl'}")
    target = Path(png) if png else Path(out) / "reward.png"
    target.write_bytes(draw_rewards(rows, width, height).png())
    return target
