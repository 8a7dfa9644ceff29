"""Checks of the optional surfaces: upstream's stateless HTTP routes, the Task API, ``/mcp``."""

from __future__ import annotations

import contextlib
import importlib.util
import json
from typing import Any

from .._exceptions import ProbeError
from ._checks import (
    Context,
    check_bad_frames,
    check_close,
    check_determinism,
    check_episode,
    check_health,
    check_isolation,
    check_metadata,
    check_schema,
    observation_problems,
)
from ._probe import HttpReply, http
from ._report import Outcome

MCP_ACCEPT = "application/json, text/event-stream"


def check_http(ctx: Context) -> None:
    """Upstream's stateless ``POST /reset`` and ``POST /step`` answer observations."""
    if ctx.schema is None:
        ctx.report.add("http", Outcome.SKIP, "no usable schema")
        return
    details: list[str] = []
    try:
        for path, body, key in (
            ("/reset", {}, "reset_observation"),
            ("/step", {"action": ctx.action(0)}, "observation"),
        ):
            reply = http("POST", ctx.url + path, body, timeout_s=ctx.timeout_s, headers=ctx.headers)
            if reply.status != 200:
                details.append(f"POST {path}: HTTP {reply.status} {reply.body[:200]!r}")
                continue
            data = reply.json()
            if not isinstance(data, dict):
                details.append(f"POST {path}: not an object")
                continue
            details += [f"POST {path}: {p}" for p in observation_problems(ctx, data, key)]
    except ProbeError as exc:
        details.append(str(exc))
    if details:
        ctx.report.add("http", Outcome.FAIL, "stateless HTTP routes", details)
    else:
        ctx.report.add("http", Outcome.PASS, "POST /reset and POST /step answer valid observations")


def _task_post(ctx: Context, path: str, body: dict[str, Any]) -> HttpReply:
    return http("POST", ctx.url + path, body, timeout_s=ctx.timeout_s, headers=ctx.headers)


def check_tasks(ctx: Context) -> None:
    """Upstream 0.10's Task API (``/{env}/splits`` ...), where the server offers it."""
    name = ctx.metadata.get("name")
    if not name:
        ctx.report.add("tasks", Outcome.SKIP, "no env name from /metadata")
        return
    base = f"/{name}"
    try:
        reply = http("GET", f"{ctx.url}{base}/splits", timeout_s=ctx.timeout_s, headers=ctx.headers)
        if reply.status in (404, 405):
            ctx.report.add("tasks", Outcome.SKIP, f"no Task API ({base}/splits is {reply.status})")
            return
        details = _task_problems(ctx, base, reply)
    except ProbeError as exc:
        ctx.report.add("tasks", Outcome.FAIL, str(exc))
        return
    if details:
        ctx.report.add("tasks", Outcome.FAIL, f"Task API at {base}/", details)
    else:
        summary = f"Task API at {base}/: splits, num_tasks, task_range, bad split"
        ctx.report.add("tasks", Outcome.PASS, summary)


def _task_problems(ctx: Context, base: str, reply: HttpReply) -> list[str]:
    splits = reply.json() if reply.status == 200 else None
    if not (isinstance(splits, list) and splits and all(isinstance(s, dict) and "name" in s for s in splits)):
        shown = reply.body[:200]
        return [f"GET {base}/splits: HTTP {reply.status}, expected a list of {{name, ...}}: {shown!r}"]
    split = splits[0]["name"]
    problems = []
    count = _task_post(ctx, f"{base}/num_tasks", {"split": split})
    num = count.json().get("num_tasks") if count.status == 200 and isinstance(count.json(), dict) else None
    if not isinstance(num, int):
        problems.append(f"POST {base}/num_tasks: HTTP {count.status} {count.body[:200]!r}")
    rng = _task_post(ctx, f"{base}/task_range", {"split": split, "start": 0, "stop": 2})
    tasks = rng.json().get("tasks") if rng.status == 200 and isinstance(rng.json(), dict) else None
    if not isinstance(tasks, list):
        problems.append(f"POST {base}/task_range: HTTP {rng.status} {rng.body[:200]!r}")
    bogus = _task_post(ctx, f"{base}/num_tasks", {"split": "__no_such_split__"})
    if not 400 <= bogus.status < 500:
        problems.append(f"an unknown split answered HTTP {bogus.status}, expected a 4xx")
    return problems


def _rpc_body(reply: HttpReply) -> Any:
    """A JSON-RPC reply from a JSON or an SSE (streamable HTTP) body."""
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        for line in reply.body.decode(errors="replace").splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
        raise ProbeError("MCP event stream carried no data")
    return reply.json()


def check_mcp(ctx: Context) -> None:
    """``/mcp``: ``tools/list`` answers a list of tools, where the server offers any."""
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {**ctx.headers, "accept": MCP_ACCEPT}
    try:
        reply = http("POST", ctx.url + "/mcp", rpc, timeout_s=ctx.timeout_s, headers=headers)
        if reply.status in (404, 405):
            ctx.report.add("mcp", Outcome.SKIP, f"no /mcp route (HTTP {reply.status})")
            return
        body = _rpc_body(reply) if reply.status == 200 else None
        if body is None or ("error" in body and _needs_initialize(body)):
            body = _initialized_list(ctx, headers)
    except (ProbeError, ValueError) as exc:
        ctx.report.add("mcp", Outcome.FAIL, f"/mcp: {exc}")
        return
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        ctx.report.add("mcp", Outcome.FAIL, f"/mcp answered {str(body)[:200]}, not JSON-RPC 2.0")
        return
    if "error" in body:
        message = str((body.get("error") or {}).get("message", ""))
        ctx.report.add("mcp", Outcome.SKIP, _no_tools(ctx, message))
        return
    tools = (body.get("result") or {}).get("tools")
    bad = [t for t in tools or [] if not (isinstance(t, dict) and t.get("name") and "inputSchema" in t)]
    if not isinstance(tools, list) or bad:
        ctx.report.add("mcp", Outcome.FAIL, f"tools/list result is malformed: {str(body)[:200]}")
        return
    names = ", ".join(t["name"] for t in tools[:8])
    ctx.report.add("mcp", Outcome.PASS, f"/mcp tools/list: {len(tools)} tool(s) ({names})")


def _no_tools(ctx: Context, message: str) -> str:
    """Why ``/mcp`` offers no tools: a server started here without the ``mcp`` extra is
    our install's doing, not the env's; say which extra."""
    if ctx.served_here and importlib.util.find_spec("mcp") is None:
        return "/mcp is not served: the 'mcp' extra is not installed here (pip install 'openenv[mcp]')"
    hint = ""
    if "support MCP" in message:
        hint = "; an openenv server serves /mcp with the 'mcp' extra installed"
    return f"/mcp offers no tools (JSON-RPC error: {message[:80]}){hint}"


def _needs_initialize(body: dict[str, Any]) -> bool:
    message = str((body.get("error") or {}).get("message", "")).lower()
    return "initiali" in message or "session" in message


def _initialized_list(ctx: Context, headers: dict[str, str]) -> Any:
    """The MCP handshake (initialize, initialized) then ``tools/list``."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "openenv-validate", "version": "1"},
        },
    }
    reply = http("POST", ctx.url + "/mcp", init, timeout_s=ctx.timeout_s, headers=headers)
    if reply.status != 200:
        raise ProbeError(f"MCP initialize answered HTTP {reply.status}: {reply.body[:200]!r}")
    session = reply.headers.get("mcp-session-id")
    if session:
        headers = {**headers, "mcp-session-id": session}
    try:
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        http("POST", ctx.url + "/mcp", note, timeout_s=ctx.timeout_s, headers=headers)
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        return _rpc_body(http("POST", ctx.url + "/mcp", rpc, timeout_s=ctx.timeout_s, headers=headers))
    finally:
        if session:  # end it: an env that allows one session at a time needs the slot back
            with contextlib.suppress(ProbeError):
                http("DELETE", ctx.url + "/mcp", None, timeout_s=ctx.timeout_s, headers=headers)


#: Every live check, in the order they run (health and metadata first: the rest need a
#: server that answers); ``validate_url`` runs them all, RUNTIME (``_runtime``) maps
#: their outcomes onto its check ids.
CHECKS = (
    check_health,
    check_metadata,
    check_schema,
    check_episode,
    check_http,
    check_determinism,
    check_bad_frames,
    check_isolation,
    check_close,
    check_tasks,
    check_mcp,
)
