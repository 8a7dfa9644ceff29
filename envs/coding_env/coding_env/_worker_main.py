"""The persistent Python worker: runs inside the sandbox, stdlib only.

Started as ``python -I -u -c <this source>``. Frames on the pipes it was given as
stdin/stdout are a 12-byte header (body length, request id; ``>IQ``) and a JSON body.
The parent sends ``{"op": "exec", "code": ...}``; the worker answers each with one
reply of the same id (``stdout``, ``stderr``, ``result``, ``exception``, ...), and
says ``{"op": "ready"}`` (id 0) once at start. A byte on the pipe named by
``CODING_ENV_INTERRUPT_FD`` interrupts the cell.

Cells share one namespace (a notebook). A trailing expression is evaluated and its
``repr`` returned as ``result``. Output written through ``sys.stdout``/``sys.stderr``
and through file descriptors 1 and 2 (child processes) is captured, keeping the head
and the tail past a limit. An ``interrupt`` raises ``KeyboardInterrupt`` in the running
cell; the namespace survives. The interrupt arrives on a pipe, not as a signal, so
it needs no way to signal a process inside the sandbox's PID namespace.
"""

import ast
import io
import json
import linecache
import os
import signal
import struct
import sys
import tempfile
import threading
import traceback
from types import FrameType
from typing import Any

SELF = globals().get("__file__", "<string>")  # "-c" source has no file
LIMIT = int(os.environ.get("CODING_ENV_OUTPUT_LIMIT", "16384"))
RESULT_LIMIT = int(os.environ.get("CODING_ENV_RESULT_LIMIT", "16384"))


class Capture(io.TextIOBase):
    """A text stream that keeps the first and last ``LIMIT // 2`` bytes written."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self.add(s.encode("utf-8", "replace"))
        return len(s)

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data[-self.half:]
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> tuple[str, int]:
        tail = bytes(self.tail[-self.half:]) if self.tail else b""
        omitted = self.total - len(self.head) - len(tail)
        if omitted <= 0:
            return (bytes(self.head) + tail).decode("utf-8", "replace"), 0
        marker = f"\n[... {omitted} bytes omitted ...]\n".encode()
        return (bytes(self.head) + marker + tail).decode("utf-8", "replace"), omitted


class FdCapture:
    """Captures what child processes write to a file descriptor (1 or 2)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.file = tempfile.TemporaryFile(dir=os.environ.get("TMPDIR") or None)  # noqa: SIM115 - lives as long as the worker
        os.dup2(self.file.fileno(), fd)

    def drain(self, into: Capture) -> None:
        f = self.file
        size = os.fstat(f.fileno()).st_size
        if not size:
            return  # the common case: no child process wrote anything
        if size:
            f.seek(0)
            if size <= 2 * into.half:
                into.add(f.read(size))
            else:
                into.add(f.read(into.half))
                into.total += size - 2 * into.half
                f.seek(size - into.half)
                into.add(f.read(into.half))
        f.truncate(0)
        f.seek(0)
        os.lseek(self.fd, 0, os.SEEK_SET)


class Channel:
    def __init__(self) -> None:
        self.rfd = os.dup(0)
        self.wfd = os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)

    def read_exact(self, n: int) -> bytes | None:
        chunks: list[bytes] = []
        while n:
            chunk = os.read(self.rfd, n)
            if not chunk:
                return None
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> Any:
        head = self.read_exact(12)
        if head is None:
            return None
        size, tag = struct.unpack(">IQ", head)
        body = self.read_exact(size)
        return None if body is None else (tag, json.loads(body))

    def send(self, obj: dict[str, Any], tag: int = 0) -> None:
        # lone surrogates (an exception message can hold one) become "?": valid UTF-8
        body = json.dumps(obj, ensure_ascii=False).encode("utf-8", "replace")
        view = memoryview(struct.pack(">IQ", len(body), tag) + body)
        while view:
            view = view[os.write(self.wfd, view):]


class Worker:
    def __init__(self) -> None:
        self.channel = Channel()
        self.out = FdCapture(1)
        self.err = FdCapture(2)
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
        self.running = False
        self.count = 0
        self.main = threading.get_ident()
        self.pid = os.getpid()
        signal.signal(signal.SIGINT, self.on_sigint)

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.running:
            raise KeyboardInterrupt

    def watch_interrupts(self, fd: int) -> None:
        """Each byte on ``fd`` interrupts the running cell (a thread that is idle
        until then, so a cell's own round trip has no thread hop)."""
        os.set_inheritable(fd, False)
        while os.read(fd, 64):
            if self.running:
                signal.pthread_kill(self.main, signal.SIGINT)

    def serve(self) -> None:
        fd = os.environ.get("CODING_ENV_INTERRUPT_FD")
        if fd:
            threading.Thread(target=self.watch_interrupts, args=(int(fd),), daemon=True).start()
        self.channel.send({"op": "ready", "pid": os.getpid()})
        while True:
            got = self.channel.recv()
            if got is None:
                os._exit(0)  # the parent is gone
            tag, msg = got
            try:
                reply = self.run_cell(str(msg.get("code", "")), msg.get("count"))
            except KeyboardInterrupt:  # a second interrupt that landed as the cell ended
                self.running = False
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
                reply = {"op": "result", "stdout": "", "stderr": "", "stdout_omitted_bytes": 0,
                         "stderr_omitted_bytes": 0, "result": None,
                         "exception": {"type": "KeyboardInterrupt", "message": "", "traceback": ""}}
            if os.getpid() != self.pid:
                os._exit(0)  # a process the cell forked: only the worker answers
            self.channel.send(reply, tag)

    def run_cell(self, code: str, count: object = None) -> dict[str, Any]:
        self.count = count if isinstance(count, int) else self.count + 1
        out, err = Capture(LIMIT), Capture(LIMIT)
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        result: str | None = None
        exception: dict[str, str] | None = None
        try:
            try:
                self.running = True
                value = self.execute(code, f"<cell {self.count}>")
            finally:
                self.running = False
            if value is not None:
                self.namespace["_"] = value
                result = safe_repr(value)
        except BaseException as exc:
            self.running = False
            exception = describe(exc)
        finally:
            sys.stdout, sys.stderr = saved
        self.out.drain(out)
        self.err.drain(err)
        stdout, out_omitted = out.text()
        stderr, err_omitted = err.text()
        return {
            "op": "result",
            "stdout": stdout,
            "stderr": stderr,
            "stdout_omitted_bytes": out_omitted,
            "stderr_omitted_bytes": err_omitted,
            "result": result,
            "exception": exception,
        }

    def execute(self, code: str, filename: str) -> Any:
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        tree = ast.parse(code, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body[-1].value)
            del tree.body[-1]
        exec(compile(tree, filename, "exec"), self.namespace)
        if last is not None:
            return eval(compile(last, filename, "eval"), self.namespace)
        return None


def safe_repr(value: object) -> str:
    try:
        text = repr(value)
    except BaseException as exc:
        text = f"<repr failed: {type(exc).__name__}: {exc}>"
    if len(text) > RESULT_LIMIT:
        half = RESULT_LIMIT // 2
        text = f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"
    return text


def describe(exc: BaseException) -> dict[str, str]:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == SELF:
        tb = tb.tb_next  # drop the worker's own frames
    try:
        lines = traceback.format_exception(type(exc), exc, tb)
        message = str(exc)
    except BaseException:
        lines, message = [f"{type(exc).__name__}\n"], "<str failed>"
    text = "".join(lines)
    if len(text) > LIMIT:
        text = text[: LIMIT // 2] + "\n[... traceback cut ...]\n" + text[-LIMIT // 2:]
    return {"type": type(exc).__name__, "message": message[:LIMIT], "traceback": text}


if __name__ == "__main__":
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
    Worker().serve()
