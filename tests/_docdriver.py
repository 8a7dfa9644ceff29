"""Runs a docs page's Python blocks in the page's venv, in one namespace (tests/test_docs.py).

Reads one JSON request per line on stdin (``{"code", "where"}``), runs it with top-level
``await`` allowed, and answers one JSON line (``{"out", "error"}``: what it printed, and
the traceback or None) on the stdout it started with; anything else written to that
descriptor (a child process) goes to stderr instead, so it cannot garble a reply.
"""

import ast
import asyncio
import contextlib
import io
import json
import os
import sys
import traceback

reply = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
sys.path[0] = os.getcwd()  # as `python` started in the page's folder (not this one: tests/)
namespace = {"__name__": "__docs__"}
for line in sys.stdin:
    request = json.loads(line)
    out, error = io.StringIO(), None
    try:
        code = compile(request["code"], request["where"], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        with contextlib.redirect_stdout(out):
            result = eval(code, namespace)
            if asyncio.iscoroutine(result):
                asyncio.run(result)
    except BaseException:
        error = traceback.format_exc()
    reply.write(json.dumps({"out": out.getvalue(), "error": error}) + "\n")
    reply.flush()
