"""RUNTIME level: the env served and driven over the wire.

The deep checks of plain ``openenv validate`` (``_checks``, ``_checks_extra``) run
first; each becomes the result of one RFC 008 check id. The checks that need the
``validation:`` block (reward range, declared tools and tasks, memory) are here.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from .._exceptions import ProbeError
from .._vmanifest import ValidationBlock
from ._checks import Context, schema_errors, stable
from ._checks_extra import CHECKS, MCP_ACCEPT, _initialized_list, _rpc_body, check_mcp
from ._contain import run_containment
from ._policy import CheckStatus
from ._probe import http
from ._report import Check, Outcome
from ._sample import sample_filled
from ._trajectory import record_trajectory
from ._vreport import Results

_STATUS = {Outcome.PASS: CheckStatus.PASS, Outcome.FAIL: CheckStatus.FAIL, Outcome.SKIP: CheckStatus.SKIP}
NO_SCHEMA = "unmet dependency: runtime.observation_schema (no usable schema)"


def _lines(*checks: Check) -> list[str]:
    return [line for c in checks for line in (f"{c.name}: {c.summary}", *c.details)]


def _worst(*checks: Check) -> CheckStatus:
    if any(c.outcome is Outcome.FAIL for c in checks):
        return CheckStatus.FAIL
    if any(c.outcome is Outcome.SKIP for c in checks):
        return CheckStatus.SKIP
    return CheckStatus.PASS


def _warm_mcp(ctx: Context) -> threading.Thread:
    """A ``GET /mcp`` without a session, sent beside the other checks: an openenv server
    imports its MCP stack on the first request to ``/mcp`` (about a second; it is not
    loaded at start, so a server that is never asked pays nothing), and this lets that
    import overlap the checks before ``check_mcp``. It opens no session and its answer
    (an error: no session named) is not read."""

    def get() -> None:
        with contextlib.suppress(ProbeError):
            http(
                "GET",
                ctx.url + "/mcp",
                timeout_s=ctx.timeout_s,
                headers={**ctx.headers, "accept": MCP_ACCEPT},
            )

    thread = threading.Thread(target=get, name="validate-warm-mcp", daemon=True)
    thread.start()
    return thread


def run_runtime(
    ctx: Context, block: ValidationBlock | None, results: Results, pid: int | None, folder: Path | None = None
) -> None:
    """Every RUNTIME check id gets a result (the orchestrator adds oracle_containment)."""
    legacy = ctx.report
    for check in CHECKS[:2]:  # health and metadata
        check(ctx)
    startup = [legacy.get("health"), legacy.get("metadata")]
    results.add(
        "runtime.startup",
        _worst(*startup),
        _lines(*startup),
        remediation="the server must answer GET /health and GET /metadata (name, description)",
    )
    if not legacy.ok:
        for check_id in ids_after_startup():
            results.add(check_id, CheckStatus.SKIP, "unmet dependency: runtime.startup")
        return
    took: dict[str, float] = {}
    warm = _warm_mcp(ctx)
    for check in CHECKS[2:]:
        if check is check_mcp:
            warm.join(ctx.timeout_s)
        started = time.monotonic()
        check(ctx)
        took[check.__name__.removeprefix("check_")] = time.monotonic() - started
    results.start()
    schema, episode = legacy.get("schema"), legacy.get("episode")
    results.add(
        "runtime.observation_schema",
        _worst(schema, episode),
        _lines(schema, episode),
        remediation="make every reply fit the schemas GET /schema publishes (or fix the schemas)",
    )
    usable = ctx.schema is not None
    _reward_well_formed(ctx, block, results) if usable else results.add(
        "runtime.reward_well_formed", CheckStatus.SKIP, NO_SCHEMA
    )
    _state_contract(ctx, results) if usable else results.add(
        "runtime.state_contract", CheckStatus.SKIP, NO_SCHEMA
    )
    _seed_control(ctx, results) if usable else results.add(
        "runtime.seed_control", CheckStatus.SKIP, NO_SCHEMA
    )
    _determinism(legacy.get("determinism"), results)
    _isolation(legacy.get("isolation"), results)
    for name, check_id, fix in (
        ("http", "runtime.http_routes", "serve POST /reset and POST /step (openenv serve does)"),
        ("bad_frames", "runtime.bad_frames", "answer a bad frame with an error reply and keep the session"),
        ("close", "runtime.close", "end the session and close the socket on a close message"),
    ):
        c = legacy.get(name)
        results.add(check_id, _STATUS.get(c.outcome, CheckStatus.FAIL), _lines(c), remediation=fix)
    _tasks(ctx, legacy.get("tasks"), block, results)
    _tools(ctx, legacy.get("mcp"), block, results)
    _resources(block, pid, results)
    _rubric(ctx, block, folder, results)
    run_containment(ctx, block, pid, results)
    record_trajectory(ctx, block, results)
    for result in results.items:  # each id's time includes the deep checks it was made from
        result.duration_s += sum(took.get(name, 0.0) for name in _FROM.get(result.check_id, ()))


#: check id -> the deep checks (``_checks``, ``_checks_extra``) its result is made from.
_FROM = {
    "runtime.observation_schema": ("schema", "episode"),
    "runtime.http_routes": ("http",),
    "runtime.episode_determinism": ("determinism",),
    "runtime.bad_frames": ("bad_frames",),
    "runtime.episode_isolation": ("isolation",),
    "runtime.close": ("close",),
    "runtime.task_declaration_accuracy": ("tasks",),
    "runtime.tool_declaration_accuracy": ("mcp",),
}


def ids_after_startup() -> list[str]:
    from ._policy import POLICY, Level

    return [c for c, (lvl, _) in POLICY.items() if lvl is Level.RUNTIME and c != "runtime.startup"]


def _reward_problems(reward: Any, where: str, low: float | None, high: float | None) -> list[str]:
    if reward is None:
        return []
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        return [f"{where}: reward {reward!r} is not a finite number"]
    if low is not None and high is not None and not low <= reward <= high:
        return [f"{where}: reward {reward} is outside the declared range [{low}, {high}]"]
    return []


def _reward_well_formed(ctx: Context, block: ValidationBlock | None, results: Results) -> None:
    low, high = block.reward.range if block is not None else (None, None)
    problems: list[str] = []
    rewards: list[Any] = []
    # the given (or minimal) actions, then one with every optional field set
    plans = [ctx.actions]
    if ctx.schema is not None:
        filled = sample_filled(ctx.schema["action"])
        if not list(ctx.validators["action"].iter_errors(filled)):
            plans.append([filled])
    try:
        for seed, plan in enumerate(plans):
            with ctx.ws() as ws:
                data = ws.expect({"type": "reset", "data": {"seed": seed}}, "observation")
                problems += _reward_problems(data.get("reward"), f"seed {seed} reset", low, high)
                for i in range(ctx.max_steps):
                    if data.get("done"):
                        break
                    data = ws.expect({"type": "step", "data": plan[i % len(plan)]}, "observation")
                    rewards.append(data.get("reward"))
                    problems += _reward_problems(data.get("reward"), f"seed {seed} step {i + 1}", low, high)
    except ProbeError as exc:
        problems.append(str(exc))
    declared = f" within [{low}, {high}]" if low is not None else " (no range declared)"
    results.add(
        "runtime.reward_well_formed",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [f"{len(rewards)} step rewards are finite numbers{declared}"],
        remediation="return a finite reward inside validation.reward.range (or declare the range it has)",
        measured={"rewards": [r for r in rewards if isinstance(r, int | float)][:20]},
    )


def _state_contract(ctx: Context, results: Results) -> None:
    problems: list[str] = []
    steps = 0
    try:
        with ctx.ws() as ws:
            ws.expect({"type": "reset", "data": {}}, "observation")
            first = ws.expect({"type": "state"}, "state")
            problems += [f"state after reset: {p}" for p in schema_errors(ctx, "state", first)]
            done = False
            while not done and steps < min(ctx.max_steps, 3):
                done = bool(ws.expect({"type": "step", "data": ctx.action(steps)}, "observation").get("done"))
                steps += 1
            last = ws.expect({"type": "state"}, "state")
            problems += [f"state after {steps} step(s): {p}" for p in schema_errors(ctx, "state", last)]
    except ProbeError as exc:
        problems.append(str(exc))
        first = last = {}
    if "step_count" in last and last["step_count"] != steps:
        problems.append(f"state.step_count is {last['step_count']} after {steps} step(s)")
    if first.get("episode_id") is not None and first.get("episode_id") != last.get("episode_id"):
        problems.append(
            f"episode_id changed within one episode: {first['episode_id']!r} -> {last['episode_id']!r}"
        )
    results.add(
        "runtime.state_contract",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems
        or [f"state fits its schema after reset and {steps} step(s); step_count and episode_id hold"],
        remediation="keep state.step_count equal to the steps taken and episode_id fixed within an episode",
    )


def _seed_control(ctx: Context, results: Results) -> None:
    try:
        firsts = []
        for _ in range(2):
            with ctx.ws() as ws:
                firsts.append(ws.expect({"type": "reset", "data": {"seed": 7}}, "observation"))
    except ProbeError as exc:
        results.add("runtime.seed_control", CheckStatus.FAIL, str(exc), remediation="accept reset(seed=...)")
        return
    same = json.dumps(stable(firsts[0]), sort_keys=True) == json.dumps(stable(firsts[1]), sort_keys=True)
    results.add(
        "runtime.seed_control",
        CheckStatus.PASS if same else CheckStatus.FAIL,
        ["reset(seed=7) twice gives the same first observation"]
        if same
        else [
            "reset(seed=7) twice gave different first observations:",
            json.dumps(firsts[0])[:200],
            json.dumps(firsts[1])[:200],
        ],
        remediation="draw every random choice of reset from a generator seeded by reset's seed",
    )


def _determinism(c: Check, results: Results) -> None:
    if c.outcome is Outcome.WARN:  # diverged, and the manifest says it may
        results.add(
            "runtime.episode_determinism",
            CheckStatus.PASS,
            [
                "seeded replays diverge, as openenv.yaml declares (deterministic: false): "
                "nothing claimed, nothing broken",
                *c.details,
            ],
            measured={"diverged": True, "claimed": False},
        )
        return
    results.add(
        "runtime.episode_determinism",
        _STATUS.get(c.outcome, CheckStatus.FAIL),
        _lines(c),
        remediation="make a seeded episode replay exactly, or set deterministic: false in openenv.yaml",
    )


def _isolation(c: Check, results: Results) -> None:
    if c.outcome is Outcome.WARN and "refuses" in c.summary:
        results.add(
            "runtime.episode_isolation", CheckStatus.PASS, [c.summary + " (one session: nothing shared)"]
        )
    elif c.outcome is Outcome.WARN:
        results.add("runtime.episode_isolation", CheckStatus.SKIP, [c.summary])
    else:
        results.add(
            "runtime.episode_isolation",
            _STATUS.get(c.outcome, CheckStatus.FAIL),
            _lines(c),
            remediation="keep each session's env and state its own (one Environment per session)",
        )


def _tasks(ctx: Context, c: Check, block: ValidationBlock | None, results: Results) -> None:
    declared = dict(block.capabilities.declared_task_count) if block else {}
    claims_api = bool(block and block.capabilities.task_api) or bool(declared)
    if c.outcome is Outcome.SKIP and not claims_api:
        # the manifest says there is no Task API, and the server serves none: accurate
        results.add(
            "runtime.task_declaration_accuracy",
            CheckStatus.PASS,
            f"declares no Task API (task_api false, no declared_task_count), and serves none: {c.summary}",
            measured={"task_api": False},
        )
        return
    problems = [line for line in _lines(c)] if c.outcome is not Outcome.PASS else []
    if c.outcome is Outcome.PASS and not claims_api:
        problems.append(f"serves a Task API the manifest does not declare: {c.summary}")
    measured: dict[str, int] = {}
    name = ctx.metadata.get("name")
    for split, count in declared.items():
        reply = http(
            "POST",
            f"{ctx.url}/{name}/num_tasks",
            {"split": split},
            timeout_s=ctx.timeout_s,
            headers=ctx.headers,
        )
        body = reply.json() if reply.status == 200 else {}
        measured[split] = body.get("num_tasks", -1) if isinstance(body, dict) else -1
        if measured[split] != count:
            problems.append(f"split {split!r}: declared {count} tasks, the server has {measured[split]}")
    results.add(
        "runtime.task_declaration_accuracy",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [c.summary + (f"; declared counts match {measured}" if measured else "")],
        remediation="make capabilities.task_api and declared_task_count match what the Task API serves",
        measured={"num_tasks": measured},
    )


def served_tools(ctx: Context) -> list[dict[str, Any]] | None:
    """``/mcp`` tools/list's tools (name, inputSchema, ...), or None when it answers none."""
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {**ctx.headers, "accept": MCP_ACCEPT}
    reply = http("POST", ctx.url + "/mcp", rpc, timeout_s=ctx.timeout_s, headers=headers)
    body = _rpc_body(reply) if reply.status == 200 else None
    if not isinstance(body, dict) or "result" not in body:
        body = _initialized_list(ctx, headers)
    tools = (body.get("result") or {}).get("tools") if isinstance(body, dict) else None
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else None


def _action_members(schema: dict[str, Any]) -> set[str]:
    """Every property name of the action schema, its union members' included."""
    names: set[str] = set()
    todo: list[Any] = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict):
                names |= set(node["properties"])
            todo.extend(v for k, v in node.items() if k != "properties")
        elif isinstance(node, list):
            todo.extend(node)
    return names


def _undeclared(ctx: Context, tools: list[dict[str, Any]]) -> list[str]:
    """With no ``declared_tools``, the env claims only the tools ``openenv serve`` makes of
    its action: each tool's arguments must be members of the action schema."""
    members = _action_members(ctx.schema["action"]) if ctx.schema else set()
    out = []
    for tool in tools:
        args = set((tool.get("inputSchema") or {}).get("properties") or {})
        if args - members:
            out.append(f"{tool.get('name')} (arguments {', '.join(sorted(args - members))})")
    return out


def _tools(ctx: Context, c: Check, block: ValidationBlock | None, results: Results) -> None:
    """``declared_tools`` against ``/mcp`` tools/list. With none declared, the env claims
    no tools beyond its action's own: a tool that is not the action fails."""
    declared = list(block.capabilities.declared_tools) if block else []
    if c.outcome is Outcome.FAIL:
        fix = "fix /mcp tools/list"
        results.add("runtime.tool_declaration_accuracy", CheckStatus.FAIL, _lines(c), remediation=fix)
        return
    note: list[str] = []
    tools: list[dict[str, Any]] = []
    if c.outcome is Outcome.PASS:
        try:
            tools = served_tools(ctx) or []
        except (ProbeError, ValueError) as exc:
            note = [str(exc)]
    served = [str(t.get("name")) for t in tools]
    if declared:
        missing = sorted(set(declared) - set(served))
        extra = sorted(set(served) - set(declared))
        problems = (
            note
            + ([f"declared but not served: {', '.join(missing)}"] if missing else [])
            + ([f"served but not declared: {', '.join(extra)}"] if extra else [])
        )
        good = f"/mcp serves exactly the declared tools ({', '.join(declared)})"
    else:
        odd = _undeclared(ctx, tools)
        beyond = f"no declared_tools, yet served beyond the action: {', '.join(odd)}"
        problems = note + ([beyond] if odd else [])
        good = (
            "no declared_tools: /mcp serves only the action's own tool(s) "
            f"({', '.join(served) or 'none'}), each taking action fields only"
        )
    results.add(
        "runtime.tool_declaration_accuracy",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [good],
        remediation="make capabilities.declared_tools the names /mcp tools/list answers"
        + (f" (declared_tools: [{', '.join(served)}])" if served else ""),
        measured={"declared": declared, "served": served},
    )


def _rss_mb(pid: int) -> tuple[float, float]:
    """(peak RSS of ``pid``, current RSS of its process tree), in MB (Linux /proc)."""

    def status(p: int, key: str) -> float:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
        return 0.0

    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        # a thread or a child may end between the listing and the read: skip it
        with contextlib.suppress(OSError):
            for task in list(Path(f"/proc/{p}/task").iterdir()):
                with contextlib.suppress(OSError):
                    todo.extend(int(k) for k in (task / "children").read_text().split())
    total = 0.0
    for p in tree:
        with contextlib.suppress(OSError):
            total += status(p, "VmRSS")
    return status(pid, "VmHWM"), total


def _resources(block: ValidationBlock | None, pid: int | None, results: Results) -> None:
    if block is None:
        results.add("runtime.resource_bounds", CheckStatus.SKIP, "unmet dependency: static.manifest")
        return
    if pid is None or not Path(f"/proc/{pid}").is_dir():
        results.add(
            "runtime.resource_bounds",
            CheckStatus.SKIP,
            "the server runs elsewhere (a URL): its memory cannot be measured from here",
        )
        return
    peak, tree = _rss_mb(pid)
    used = max(peak, tree)
    ok = used <= block.resources.memory_mb
    results.add(
        "runtime.resource_bounds",
        CheckStatus.PASS if ok else CheckStatus.FAIL,
        f"server memory {used:.0f} MB (peak of the server, or its process tree now) "
        f"vs declared {block.resources.memory_mb} MB",
        remediation="declare resources.memory_mb the env needs, or use less",
        measured={"peak_rss_mb": round(peak, 1), "tree_rss_mb": round(tree, 1)},
    )


def _rubric(ctx: Context, block: ValidationBlock | None, folder: Path | None, results: Results) -> None:
    """The rubric checks, where ``capabilities.rubric_tree`` is declared (else the
    manifest declares them not applicable: ``_applicable``)."""
    if block is None:
        for check_id in ("runtime.rubric_introspectable", "runtime.reward_attribution"):
            results.add(check_id, CheckStatus.SKIP, "unmet dependency: static.manifest (no rubric_tree)")
        return
    if not block.capabilities.rubric_tree:
        return
    from ._rubric import run_rubric

    run_rubric(folder, ctx.action(0) if ctx.actions else {}, results)
