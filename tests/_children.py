"""A test's Python children, each in a session of its own (a kill of its group reaches
all it started; a terminal's signals reach none of it).

``python_child(*args)`` starts ``python *args`` with its stdout piped as text.
``side_script(script, *args)`` runs one of the scripts the chaos tests measure from (the
/health poller, the victim): such a script prints ``ready`` (and what the test needs to
know, on the same line) once started, reads lines from its stdin as marks until it
closes, then prints its result as one line of JSON.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def python_child(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, text=True, start_new_session=True, **kw
    )


class SideScript:
    """A running side script: ``hello`` (the rest of its ready line), ``mark()``; its
    ``answer`` once the block has ended."""

    def __init__(self, proc: subprocess.Popen[str], hello: str) -> None:
        self._proc = proc
        self.hello = hello
        self.answer: Any = None

    def mark(self) -> None:
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it ended on an error: in its answer
            self._proc.stdin.write("\n")
            self._proc.stdin.flush()


@contextlib.contextmanager
def side_script(script: Path, *args: str, timeout_s: float = 60) -> Iterator[SideScript]:
    """``script`` running while the block runs; its answer in ``answer`` after it."""
    proc = python_child(str(script), *args, stdin=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline().split(maxsplit=1)
        assert ready[:1] == ["ready"], f"{script.name} did not start: {ready}"
        side = SideScript(proc, ready[1].strip() if len(ready) > 1 else "")
        yield side
    finally:
        out, _ = proc.communicate("", timeout=timeout_s)
    side.answer = json.loads(out)
