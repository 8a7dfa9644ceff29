"""The grader's end of a solution in its own sandbox: calls go in, plain values come out.

``SolutionProcess`` starts ``_solution_main.py`` in a fresh sandbox and forks one child
of it per test; ``Remote`` stands for an object that lives there (a function, a class,
an instance). Calling a ``Remote`` sends the arguments as plain data and builds the
reply out of builtin types only (``openenv.rewards._plain``): whatever the solution
returns, the grader never holds one of its objects, so no ``__eq__``, ``__bool__`` or
``__hash__`` of the solution's runs here. A ``Remote`` has no truth value, compares
equal only to itself and supports nothing but calls and attributes.
"""

from __future__ import annotations

import builtins
import contextlib
import subprocess
import threading
from importlib import resources
from typing import Any

from openenv.rewards._plain import decode, encode
from openenv.sandbox import Sandbox, SandboxConfig

from ._channel import Channel, ChannelBroken
from ._channel import encode as encode_frame

#: The longest reply the grader reads from a solution (a value of some tens of
#: thousands of items; the hidden tests' values are far smaller). Parsing a frame is one
#: C call that holds the interpreter throughout: 4 MiB held every session's event loop
#: for 40-60 ms on a loaded 2-core machine, 1 MiB for a quarter of that.
MAX_REPLY = 1 << 20
_SOURCE = (
    resources.files("openenv.rewards").joinpath("_plain.py").read_text()
    + "\n\n"
    + resources.files(__package__).joinpath("_solution_main.py").read_text()
)


class SolutionLost(Exception):
    """The solution's process died, overran its time or broke the protocol."""


class SolutionRaised(Exception):
    """The solution raised something that is not a builtin ``Exception`` (``SystemExit``,
    ``KeyboardInterrupt``, its own ``BaseException`` subclass): the test fails."""


class SolutionProcess:
    """One sandbox running the solution; ``begin``/``end`` bracket one test.

    Every write and read waits at most until ``deadline`` (the test's, or the
    grading's while the solution loads); replies are at most ``MAX_REPLY`` bytes.
    """

    def __init__(self, config: SandboxConfig, *, python: str, deadline: float) -> None:
        self._life_lock = threading.Lock()  # kill() never reaches a sandbox close() gave back
        self.sandbox = Sandbox(config)
        self.deadline = deadline
        self._seq = 0
        try:
            self.proc = self.sandbox.popen(
                [python, "-I", "-c", _SOURCE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            self._channel = Channel.to_process(self.proc, max_frame=MAX_REPLY)
        except BaseException:
            self.close()
            raise
        self.error: str | None = None

    def load(self, solution: str) -> None:
        """Run ``solution`` in the process; ``error`` says how it failed, if it did.
        (Apart from ``__init__``, so that whoever tracks the process to kill it at
        shutdown has it before a solution that takes its time to load runs.)"""
        ready = self.request({"solution": solution})
        if ready.get("op") != "ready":
            raise SolutionLost("the solution's process broke the protocol")
        error = ready.get("error")
        self.error = None if error is None else str(error)[:2000]

    def begin(self, deadline: float) -> None:
        """Start a test: a fresh child of the solution's process answers until ``end``."""
        self.deadline = deadline
        self._send({"op": "fork"})

    def end(self) -> None:
        """End the test; ``SolutionLost`` when the process does not say it has."""
        self._send({"op": "end"})
        if self._recv().get("op") != "ended":
            raise SolutionLost("the solution's process broke the protocol")

    def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        self._send(msg)
        reply = self._recv()
        if reply.get("op") == "ended":
            raise SolutionLost("the solution's process died during the test")
        return reply

    def kill(self) -> None:
        """Kill the solution's processes and give its sandbox back, from any thread
        (its pipes stay for ``close``); the grading waiting on them gets
        ``SolutionLost`` at once."""
        with self._life_lock:
            self.sandbox.close()

    def close(self) -> None:
        with self._life_lock:
            self.sandbox.close()
        proc = getattr(self, "proc", None)
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)

    # ---- framing -----------------------------------------------------------------
    def _send(self, obj: dict[str, Any]) -> None:
        self._seq += 1
        try:
            self._channel.send(encode_frame(obj, self._seq), self.deadline)
        except ChannelBroken as broken:
            raise SolutionLost(broken.about("the solution's process")) from None

    def _recv(self) -> dict[str, Any]:
        """The reply to the latest request, or the ``ended`` the process says unasked."""
        try:
            frame = self._channel.recv(self._seq, self.deadline)
        except ChannelBroken as broken:
            raise SolutionLost(broken.about("the solution's process")) from None
        if frame is None:
            raise SolutionLost("the test ran past its time limit")
        return frame


class Remote:
    """An object of the solution's, living in its sandbox."""

    __slots__ = ("_h", "_label", "_proc")

    def __init__(self, proc: SolutionProcess, h: int, label: str) -> None:
        self._proc, self._h, self._label = proc, h, label

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        reply = self._proc.request({"op": "attr", "h": self._h, "name": name})
        return _result(self._proc, reply, f"{self._label}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        msg = {"op": "call", "h": self._h, "args": _encode(args), "kwargs": _encode(kwargs)}
        reply = self._proc.request(msg)
        return _result(self._proc, reply, f"{self._label}(...)")

    def __bool__(self) -> bool:
        raise TypeError(f"{self._label} is an object of the solution's own type: it has no truth value here")

    def __repr__(self) -> str:
        return f"<solution object {self._label}>"


def args_after(proc: SolutionProcess) -> tuple[Any, ...]:
    """The arguments of the test's latest call as the solution left them: copies, for
    a test that checks what the call changed in place. The test's own arguments never
    change (each call sends a copy), so it compares against values the solution
    never held."""
    value = _result(proc, proc.request({"op": "args"}), "args_after()")
    return value if type(value) is tuple else ()


def lookup(proc: SolutionProcess, name: str) -> Any:
    """The value of a name the solution defined (``NameError`` when it did not)."""
    reply = proc.request({"op": "get", "name": name})
    if "raised" in reply:
        raise NameError(f"the solution defines no {name!r}")
    return _result(proc, reply, name)


def _encode(value: Any) -> list[Any]:
    def handle(obj: Any) -> int:
        if isinstance(obj, Remote):
            return obj._h
        raise TypeError(f"a test passed a {type(obj).__name__}, which is not a plain value")

    return encode(value, handle)


def _decode(proc: SolutionProcess, tokens: Any, label: str) -> Any:
    try:
        return decode(tokens, lambda h: Remote(proc, h, f"<{label}>"))
    except ValueError as exc:
        raise SolutionLost(f"the solution's process sent a malformed value ({exc})") from None


def _result(proc: SolutionProcess, reply: dict[str, Any], label: str) -> Any:
    if "raised" in reply:
        raise _exception(reply.get("raised"), str(reply.get("message", ""))[:2000])
    return _decode(proc, reply.get("value"), label)


def _exception(names: Any, message: str) -> Exception:
    """The builtin ``Exception`` class nearest the raised class, else ``SolutionRaised``."""
    names = [str(n) for n in names] if isinstance(names, list) else []
    for name in names:
        cls = getattr(builtins, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls(message)
    first = names[0] if names else "an exception"
    return SolutionRaised(f"the solution raised {first}: {message}")
