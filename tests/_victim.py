"""Step one session from a process of its own (run as a script by the chaos tests):
``python _victim.py KIND URL``. KIND ``coding`` steps the cell ``1`` (the coding env's
``two_sum`` task), ``terminal`` the command ``echo hi`` (a free shell). It resets a
session, prints ``ready`` (for ``terminal`` followed by the session's uid, which names
its sandbox), then steps back to back, starting a new phase at each line read from stdin;
when stdin closes it prints the seconds of each step as a JSON list of phases (lists).

Its own process, as ``tests/_health_poller.py`` is, and at the same priority: stepped
from the test process beside the attackers' clients, a step waited for that process's
interpreter lock and CPU as much as for the server (coding: p99 58.9 and 68.9 ms in 2
of 14 runs, 76 ms at load 26, while the same server answered /health from a process of
its own within 38 ms; terminal: 55 and 62 ms with two test suites beside).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: What each kind of victim steps: (its env's models, reset's keywords, the action, a
#: check of the observation, an action whose output the test is told or None).
Kind = tuple[Any, dict[str, Any], Any, Callable[[Any], bool], Any]


def _kind(name: str) -> Kind:
    if name == "coding":
        from coding_env import MODELS as CODING
        from coding_env import CodeAction

        return CODING, {"task_id": "two_sum"}, CodeAction(code="1"), lambda o: o.result == "1", None
    if name == "terminal":
        from terminal_env import MODELS as TERMINAL
        from terminal_env import RunAction

        step = RunAction(command="echo hi", timeout_s=10)
        return TERMINAL, {"free_shell": True}, step, lambda o: o.output == "hi\n", RunAction(command="id -u")
    raise SystemExit(f"unknown victim kind {name!r}: coding or terminal")


class Victim:
    """The stepping process: ``hello`` (the rest of its ready line), ``mark()`` starts a
    new phase; ``phases`` once the block has ended."""

    def __init__(self, side: Any) -> None:
        self._side = side
        self.hello: str = side.hello
        self.phases: list[list[float]] = []

    def mark(self) -> None:
        self._side.mark()


@contextlib.contextmanager
def victim_steps(kind: str, url: str) -> Iterator[Victim]:
    """The victim stepping from its own process while the block runs; its step times by
    phase in ``Victim.phases`` after it. A failed step ends it: the block's end raises."""
    from tests._children import side_script  # not when run as the script

    with side_script(Path(__file__).resolve(), kind, url) as side:
        victim = Victim(side)
        yield victim
    answer = side.answer
    if answer and answer[-1] and answer[-1][0] == "error":
        raise AssertionError(f"the victim's step failed: {answer[-1][1]}")
    victim.phases = answer


def main() -> None:
    from openenv import EnvClient
    from openenv.server._priority import favour_loop_thread

    models, reset, action, answered, tell = _kind(sys.argv[1])
    favour_loop_thread()
    marks: list[int] = []
    closed = threading.Event()

    def read_marks() -> None:
        for _ in sys.stdin:
            marks.append(1)
        closed.set()

    phases: list[list[Any]] = [[]]
    with EnvClient(sys.argv[2], models) as env:
        env.reset(**reset)
        told = "" if tell is None else env.step(tell).observation.output.strip()
        print(f"ready {told}".strip(), flush=True)
        threading.Thread(target=read_marks, daemon=True).start()
        seen = 0
        for _ in range(1_000_000):
            if closed.is_set():
                break
            while seen < len(marks):
                phases.append([])
                seen += 1
            t0 = time.monotonic()
            try:
                observation = env.step(action).observation
            except Exception as exc:  # reported, then the test raises
                phases.append(["error", f"{type(exc).__name__}: {exc}"])
                break
            phases[-1].append(time.monotonic() - t0)
            if not answered(observation):
                phases.append(["error", f"step answered {observation!r}"])
                break
    print(json.dumps(phases), flush=True)


if __name__ == "__main__":
    main()
