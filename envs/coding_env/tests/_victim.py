"""Step a coding session from a process of its own (run as a script by the chaos test):
``python _victim.py URL``. It resets a session, prints ``ready``, then steps ``1``
back to back, starting a new phase at each line read from stdin; when stdin closes it
prints the seconds of each step as a JSON list of phases (lists).

Its own process, as ``tests/_health_poller.py`` is, and at the same priority: stepped
from the test process beside the attackers' 32 client threads, a step waited for that
process's interpreter lock and CPU as much as for the server (victim p99 58.9 and 68.9
ms in 2 of 14 runs, 76 ms at load 26, while the same server answered /health from a
process of its own within 38 ms).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

_HERE = Path(__file__).resolve().parent


class Victim:
    """The stepping process; ``mark()`` starts a new phase, ``phases`` once closed."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self._proc = proc
        self.phases: list[list[float]] = []

    def mark(self) -> None:
        assert self._proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it ended on a failed step: raised at the end
            self._proc.stdin.write("\n")
            self._proc.stdin.flush()


@contextlib.contextmanager
def victim_steps(url: str) -> Iterator[Victim]:
    """The victim stepping from its own process while the block runs; its step times by
    phase in ``Victim.phases`` after it. A failed step ends it: ``phases`` then ends
    with ``["error", message]`` and the block's end raises."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=_HERE,
    )
    victim = Victim(proc)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        yield victim
    finally:
        out, _ = proc.communicate("", timeout=60)
    answer = json.loads(out)
    if answer and answer[-1] and answer[-1][0] == "error":
        raise AssertionError(f"the victim's step failed: {answer[-1][1]}")
    victim.phases = answer


def main() -> None:
    from coding_env import MODELS, CodeAction

    from openenv import EnvClient
    from openenv.server._priority import favour_loop_thread

    favour_loop_thread()
    marks: list[int] = []
    closed = threading.Event()

    def read_marks() -> None:
        for _ in sys.stdin:
            marks.append(1)
        closed.set()

    phases: list[list[float]] = [[]]
    with EnvClient(sys.argv[1], MODELS) as env:
        env.reset(task_id="two_sum")
        print("ready", flush=True)
        threading.Thread(target=read_marks, daemon=True).start()
        seen = 0
        action = CodeAction(code="1")
        for _ in range(1_000_000):
            if closed.is_set():
                break
            while seen < len(marks):
                phases.append([])
                seen += 1
            t0 = time.monotonic()
            try:
                result = env.step(action).observation.result
            except Exception as exc:  # reported, then the test raises
                phases.append(["error", f"{type(exc).__name__}: {exc}"])  # type: ignore[list-item]
                break
            phases[-1].append(time.monotonic() - t0)
            if result != "1":
                phases.append(["error", f"step answered {result!r}"])  # type: ignore[list-item]
                break
    print(json.dumps(phases), flush=True)


if __name__ == "__main__":
    main()
