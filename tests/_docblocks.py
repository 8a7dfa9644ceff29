"""The fenced blocks of the docs, and how tests/test_docs.py runs them.

A block is run when its language is ``bash``, ``sh`` or ``python``; an HTML comment
on the line(s) just before its opening fence changes how::

    <!-- docs-test: skip needs a Hugging Face account -->
    <!-- docs-test: background -->          a server: started, waited on, stopped at page end
    <!-- docs-test: timeout 300 -->         a longer bound for this block (seconds)
    <!-- docs-test: expect -->              the next ```text block is this block's output
    <!-- docs-test: docker -->              needs a Docker engine
    <!-- docs-test: venv standard +envs -->  what the reader installed, from here on (tests/_docvenv.py)

``venv`` is the one marker that is not the next block's alone: it holds until the next
``venv`` marker. A page without one runs in the venv of README's first command.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

RUNNABLE = ("bash", "sh", "python")
DEFAULT_TIMEOUT_S = 120.0
KNOWN_MARKERS = ("skip", "background", "timeout", "expect", "docker", "venv")
#: What ``bash scripts/demo.sh`` installs: README's first command.
DEFAULT_VENV = "standard +envs"

_FENCE = re.compile(r"^```([\w+-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    """One fenced block of a page, with the markers written just before it."""

    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    markers: dict[str, str] = field(default_factory=dict)
    expected: str | None = None  # the text block after a block marked ``expect``
    venv: str = DEFAULT_VENV  # what the reader has installed when they reach this block

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.lang in RUNNABLE

    @property
    def skip_reason(self) -> str | None:
        return self.markers.get("skip")

    @property
    def timeout_s(self) -> float:
        return float(self.markers.get("timeout", DEFAULT_TIMEOUT_S))


def parse_markers(text: str) -> dict[str, str]:
    """``"expect; timeout 300"`` -> ``{"expect": "", "timeout": "300"}``; a skip's reason
    runs to the end of the comment (it may hold ``;``)."""
    markers: dict[str, str] = {}
    parts = text.split(";")
    for i, part in enumerate(parts):
        name, _, value = part.strip().partition(" ")
        if name == "skip":
            markers[name] = ";".join([value, *parts[i + 1 :]]).strip()
            break
        if name:
            markers[name] = value.strip()
    return markers


def blocks(path: Path, root: Path) -> list[Block]:
    """Every top-level fenced block of one Markdown page, in order."""
    page = str(path.relative_to(root))
    lines = path.read_text().splitlines()
    found: list[Block] = []
    pending: dict[str, str] = {}
    venv = DEFAULT_VENV
    i = 0
    while i < len(lines):
        marker = _MARKER.match(lines[i])
        fence = _FENCE.match(lines[i])
        if marker:
            pending.update(parse_markers(marker.group(1)))
            venv = pending.get("venv", venv)
        elif fence:
            start, lang = i, fence.group(1) if fence else ""
            i += 1
            body: list[str] = []
            while i < len(lines) and lines[i].rstrip() != "```":
                body.append(lines[i])
                i += 1
            block = Block(page, start + 1, lang, "\n".join(body) + "\n", pending, venv=venv)
            if found and "expect" in found[-1].markers and found[-1].expected is None and lang == "text":
                found[-1].expected = block.code
            found.append(block)
            pending = {}
        elif lines[i].strip():
            pending = {}  # a marker belongs to the block right after it
        i += 1
    return found


def expected_lines_found(expected: str, output: str) -> str | None:
    """None when every non-empty expected line matches an output line, in order
    (``...`` matches anything, the spaces around it included); else the first line
    that was not found."""
    out = output.splitlines()
    at = 0
    for want in (line.strip() for line in expected.splitlines()):
        if not want:
            continue
        pattern = re.compile(".*".join(re.escape(piece.strip()) for piece in want.split("...")))
        while at < len(out) and not pattern.search(out[at]):
            at += 1
        if at == len(out):
            return want
        at += 1
    return None


#: A loopback port the docs name (8000-8999): after ``127.0.0.1:``, ``localhost:``,
#: ``--port `` or ``port=``; a container's side of ``-p 8000:8000`` is left as it is.
_PORT = re.compile(r"(?:(?<=127\.0\.0\.1:)|(?<=localhost:)|(?<=--port )|(?<=port=))(8\d\d\d)\b")


def with_port(code: str, port: int | dict[int, int], fresh: Callable[[], int] | None = None) -> str:
    """The docs' loopback ports as this run's free ones: ``port`` is 8000's, or a map from
    the docs' ports to this run's, which ``fresh()`` extends with a free port for each
    other port the page names (two test runs at once must not meet on a docs' 8001)."""
    ports = {8000: port} if isinstance(port, int) else port

    def mapped(m: re.Match[str]) -> str:
        docs = int(m.group(1))
        if docs not in ports:
            if fresh is None:
                return m.group(1)
            ports[docs] = fresh()
        return str(ports[docs])

    return _PORT.sub(mapped, code)
