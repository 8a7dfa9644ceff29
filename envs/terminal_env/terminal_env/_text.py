"""Terminal output as text: ANSI escapes stripped, line ends normalised, head and tail kept."""

from __future__ import annotations

import re

# CSI sequences, OSC strings, two-byte escapes, and lone control bytes (not \t \n \r \b).
_ANSI = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC ... BEL or ST
    rb"|\x1b[@-Z\\-_]"  # other two-byte escapes
    rb"|[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]"
)


def clean(data: bytes) -> str:
    """Decode terminal bytes for a model: no escapes, ``\\n`` line ends, no stray ``\\r``."""
    data = _ANSI.sub(b"", data).replace(b"\r\n", b"\n")
    text = data.decode("utf-8", errors="replace")
    if "\r" in text:  # a progress bar's carriage returns: keep each line's last state
        text = "\n".join(line.rsplit("\r", 1)[-1] if line.strip("\r") else "" for line in text.split("\n"))
    return text


def clip(text: str, limit: int) -> tuple[str, int]:
    """``text`` with its middle cut to ``limit`` characters; the count cut."""
    if len(text) <= limit:
        return text, 0
    head = limit // 2
    tail = limit - head
    omitted = len(text) - limit
    return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[len(text) - tail :]}", omitted
