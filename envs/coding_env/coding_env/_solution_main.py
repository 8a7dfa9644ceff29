"""The graded solution's side of a grading: runs in a fresh sandbox, stdlib only.

Started as ``python -I -c <openenv/rewards/_plain.py + this source>``; frames on its
stdin/stdout are a 12-byte header (body length, request id; ``>IQ``) and JSON. It
reads the solution, runs it and answers ``{"op": "ready", "error"}``. Then for each
test the grader sends ``{"op": "fork"}``: a forked child answers the test's requests,
one reply each with the request's id, until ``{"op": "end"}``; then this process says
``{"op": "ended"}`` with id 0 (also when the child died early, so the grader never
waits on a dead test).

Requests: ``{"op": "get", "name"}`` (a name the solution defined), ``{"op":
"call", "h", "args", "kwargs"}``/``{"op": "attr", "h", "name"}`` on a handle, and
``{"op": "args"}``: the arguments of the test's latest call as the call left them.
Replies: ``{"value"}`` or ``{"raised": [class names along the MRO], "message"}``. Values cross as plain data
(``encode``); any other object stays here and crosses as a handle.

Nothing here is trusted by the grader: the solution runs in this process and may
rewrite any of it. The grader decodes what arrives into builtin types, keeps the
tests and expected values on its side, and compares there.
"""

import json
import os
import struct
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # in the sandbox they come first in the same source
    from openenv.rewards._plain import decode, encode


class Pipe:
    def __init__(self) -> None:
        self.rfd = os.dup(0)
        self.wfd = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)

    def read_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = os.read(self.rfd, n - len(data))
            if not chunk:
                os._exit(0)  # the grader is gone
            data += chunk
        return data

    def recv(self) -> tuple:
        size, tag = struct.unpack(">IQ", self.read_exact(12))
        return tag, json.loads(self.read_exact(size))

    def send(self, obj: dict, tag: int = 0) -> None:
        body = json.dumps(obj).encode("utf-8", "replace")
        view = memoryview(struct.pack(">IQ", len(body), tag) + body)
        while view:
            view = view[os.write(self.wfd, view) :]


class Handles:
    def __init__(self) -> None:
        self.objects: list = []
        self.last_args: tuple = ()

    def put(self, obj: object) -> int:
        self.objects.append(obj)
        return len(self.objects) - 1

    def get(self, h: int) -> object:
        return self.objects[h]


def answer(msg: dict, namespace: dict, handles: Handles) -> dict:
    try:
        op = msg.get("op")
        if op == "get":
            value = namespace[str(msg["name"])]
            return {"value": encode(value, handles.put)}
        if op == "args":
            return {"value": encode(handles.last_args, handles.put)}
        target = handles.get(int(msg["h"]))
        if op == "attr":
            return {"value": encode(getattr(target, str(msg["name"])), handles.put)}
        args = decode(msg["args"], handles.get)
        kwargs = decode(msg["kwargs"], handles.get)
        handles.last_args = args
        value = target(*args, **kwargs)
        return {"value": encode(value, handles.put)}
    except BaseException as exc:
        names = [c.__name__ for c in type(exc).__mro__]
        try:
            message = str(exc)[:2000]
        except BaseException:
            message = ""
        return {"raised": names, "message": message}


def serve_test(pipe: Pipe, namespace: dict) -> None:
    handles = Handles()
    while True:
        tag, msg = pipe.recv()
        if msg.get("op") == "end":
            os._exit(0)
        pipe.send(answer(msg, namespace, handles), tag)


def main() -> None:
    pipe = Pipe()
    tag, first = pipe.recv()
    solution = first.get("solution", "")
    namespace = {"__name__": "solution"}
    error = None
    try:
        exec(compile(solution, "<solution>", "exec"), namespace)
    except BaseException as exc:
        error = traceback.format_exception_only(type(exc), exc)[-1].strip()[:2000]
    pipe.send({"op": "ready", "error": error}, tag)
    while True:
        _, msg = pipe.recv()
        if msg.get("op") != "fork":
            continue
        pid = os.fork()
        if pid == 0:
            try:
                serve_test(pipe, namespace)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        pipe.send({"op": "ended"})


main()
