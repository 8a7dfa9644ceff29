"""The conformance checks of ``openenv validate``, run against a live server by URL.

Each check adds one line to the report and never raises: a probe that fails becomes a
``FAIL`` with the reason. Checks that need the schema skip when it could not be read.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ProbeError
from ._probe import WsProbe, http
from ._report import Outcome, Report
from ._sample import sample_filled, sample_instance

#: The keys ``/schema`` must hold (upstream 0.10's shape).
SCHEMA_KEYS = ("action", "observation", "state")


@dataclass
class Context:
    """What the checks share: the target, the schemas read so far, the actions to send."""

    url: str
    report: Report
    timeout_s: float = 10.0
    max_steps: int = 5
    deterministic: bool | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)
    sampled: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    validators: dict[str, Any] = field(default_factory=dict)
    #: The server was started by ``validate_path`` with this interpreter (its extras are ours).
    served_here: bool = False

    def get(self, path: str) -> Any:
        reply = http("GET", self.url + path, timeout_s=self.timeout_s, headers=self.headers)
        if reply.status != 200:
            raise ProbeError(f"GET {path} answered HTTP {reply.status}: {reply.body[:200]!r}")
        return reply.json()

    def ws(self) -> WsProbe:
        return WsProbe(self.url, self.timeout_s, self.headers or None)

    def action(self, i: int) -> dict[str, Any]:
        return self.actions[i % len(self.actions)]


def check_health(ctx: Context) -> None:
    try:
        body = ctx.get("/health")
    except ProbeError as exc:
        ctx.report.add("health", Outcome.FAIL, str(exc))
        return
    if not isinstance(body, dict) or body.get("status") != "healthy":
        ctx.report.add("health", Outcome.FAIL, f'/health answered {body!r}, expected {{"status": "healthy"}}')
        return
    ctx.report.add("health", Outcome.PASS, "GET /health is healthy")


def check_metadata(ctx: Context) -> None:
    try:
        body = ctx.get("/metadata")
    except ProbeError as exc:
        ctx.report.add("metadata", Outcome.FAIL, str(exc))
        return
    problems = [
        f"'{key}' is missing or not a non-empty string"
        for key in ("name", "description")
        if not (isinstance(body, dict) and isinstance(body.get(key), str) and body[key])
    ]
    if problems:
        ctx.report.add("metadata", Outcome.FAIL, "GET /metadata is incomplete", problems)
        return
    ctx.metadata = body
    ctx.report.add("metadata", Outcome.PASS, f"{body['name']}: {body['description'][:60]}")


def check_schema(ctx: Context) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        body = ctx.get("/schema")
    except ProbeError as exc:
        ctx.report.add("schema", Outcome.FAIL, str(exc))
        return
    if not isinstance(body, dict):
        ctx.report.add("schema", Outcome.FAIL, f"GET /schema is not an object: {str(body)[:200]}")
        return
    problems = [f"'{key}' is missing" for key in SCHEMA_KEYS if not isinstance(body.get(key), dict)]
    for key, sub in body.items():
        if not isinstance(sub, dict):
            continue
        try:
            Draft202012Validator.check_schema(sub)
            ctx.validators[key] = Draft202012Validator(sub)
        except SchemaError as exc:
            problems.append(f"'{key}' is not a valid JSON Schema: {exc.message}")
    if problems:
        ctx.report.add("schema", Outcome.FAIL, "GET /schema is not usable", problems)
        return
    ctx.schema = body
    if not ctx.actions:
        ctx.sampled = True
        try:
            ctx.actions = [sample_instance(body["action"])]
        except (ValueError, KeyError, TypeError) as exc:
            ctx.report.add("schema", Outcome.FAIL, f"no action can be made from the action schema: {exc}")
            ctx.schema = None
            return
    bad = [a for a in ctx.actions if list(ctx.validators["action"].iter_errors(a))]
    if bad:
        ctx.report.add("schema", Outcome.FAIL, f"the action {bad[0]} does not fit the action schema")
        ctx.schema = None
        return
    extra = sorted(set(body) - set(SCHEMA_KEYS))
    ctx.report.add(
        "schema", Outcome.PASS, f"action, observation, state are JSON Schemas (+{', '.join(extra) or 'none'})"
    )


def schema_errors(ctx: Context, key: str, instance: Any) -> list[str]:
    validator = ctx.validators.get(key) or ctx.validators["observation"]
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
        for e in validator.iter_errors(instance)
    ][:10]


def observation_problems(ctx: Context, data: dict[str, Any], key: str) -> list[str]:
    """What is wrong with one observation reply's ``data``."""
    problems = []
    obs = data.get("observation")
    if not isinstance(obs, dict):
        return [f"'observation' is not an object: {str(obs)[:100]}"]
    reward = data.get("reward")
    if reward is not None and not isinstance(reward, int | float):
        problems.append(f"reward {reward!r} is not a number or null")
    if not isinstance(data.get("done", False), bool):
        problems.append(f"done {data.get('done')!r} is not a boolean")
    full = {**obs, "reward": reward, "done": data.get("done", False)}
    if "truncated" in data:
        full["truncated"] = data["truncated"]
    problems.extend(schema_errors(ctx, key, full))
    return problems


def _refused(exc: ProbeError) -> bool:
    return "VALIDATION_ERROR" in str(exc)


def try_filled_action(ctx: Context) -> str | None:
    """The schema's minimal action was refused: try one with every optional field set.

    Returns a note for the report when that one is taken; None when it is refused too.
    """
    assert ctx.schema is not None
    filled = sample_filled(ctx.schema["action"])
    if filled == ctx.actions[0] or list(ctx.validators["action"].iter_errors(filled)):
        return None
    try:
        with ctx.ws() as ws:
            ws.expect({"type": "reset", "data": {}}, "observation")
            ws.expect({"type": "step", "data": filled}, "observation")
    except ProbeError:
        return None
    minimal, ctx.actions = ctx.actions[0], [filled]
    return f"the schema's minimal action {json.dumps(minimal)} was refused; using {json.dumps(filled)}"


def check_episode(ctx: Context) -> None:
    """reset, then steps until done or ``max_steps``, then state: every reply checked."""
    if ctx.schema is None:
        ctx.report.add("episode", Outcome.SKIP, "no usable schema")
        return
    try:
        _episode(ctx)
    except ProbeError as exc:
        note = try_filled_action(ctx) if ctx.sampled and _refused(exc) else None
        if note is None:
            hint = "; the env refuses what its action schema allows: pass --action" if _refused(exc) else ""
            ctx.report.add("episode", Outcome.FAIL, f"{exc}{hint}")
            ctx.schema = None  # the checks after this one would only repeat the failure
            return
        _episode(ctx, [note])


def _episode(ctx: Context, notes: list[str] | None = None) -> None:
    details: list[str] = []
    steps = 0
    try:
        with ctx.ws() as ws:
            data = ws.expect({"type": "reset", "data": {}}, "observation")
            details += [f"reset: {p}" for p in observation_problems(ctx, data, "reset_observation")]
            done = bool(data.get("done"))
            while not done and steps < ctx.max_steps:
                data = ws.expect({"type": "step", "data": ctx.action(steps)}, "observation")
                steps += 1
                details += [f"step {steps}: {p}" for p in observation_problems(ctx, data, "observation")]
                done = bool(data.get("done"))
            state = ws.expect({"type": "state"}, "state")
            details += [f"state: {p}" for p in schema_errors(ctx, "state", state)]
    except ProbeError as exc:
        if steps == 0 and not notes:
            raise  # the first step: maybe the sampled action; check_episode decides
        ctx.report.add("episode", Outcome.FAIL, f"after {steps} step(s): {exc}", details)
        return
    if details:
        ctx.report.add("episode", Outcome.FAIL, "replies do not match the published schemas", details)
        return
    ended = "ended" if done else "still running"
    ctx.report.add(
        "episode",
        Outcome.PASS,
        f"reset + {steps} step(s) ({ended}) + state over /ws match the schemas",
        list(notes or []),
    )


def _trajectory(ctx: Context, seed: int, steps: int) -> list[Any]:
    out: list[Any] = []
    with ctx.ws() as ws:
        data = ws.expect({"type": "reset", "data": {"seed": seed}}, "observation")
        out.append(data)
        for i in range(steps):
            if data.get("done"):
                break
            data = ws.expect({"type": "step", "data": ctx.action(i)}, "observation")
            out.append(data)
    return out


#: Keys of an observation that may differ between equal seeds: timings and ids.
_VOLATILE = re.compile(r"(^|_)(s|ms|time|duration|elapsed|timestamp|at|id)$")


def stable(value: Any) -> Any:
    """``value`` without timing and id keys (compared across two seeded resets)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if not _VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def check_determinism(ctx: Context) -> None:
    if ctx.schema is None:
        ctx.report.add("determinism", Outcome.SKIP, "no usable schema")
        return
    try:
        first, second = (_trajectory(ctx, 1234, min(ctx.max_steps, 3)) for _ in range(2))
    except ProbeError as exc:
        ctx.report.add("determinism", Outcome.FAIL, str(exc))
        return
    diffs = [  # timings and ids aside (``stable``): they are not the episode's content
        f"reply {i}: {json.dumps(a)[:120]} != {json.dumps(b)[:120]}"
        for i, (a, b) in enumerate(zip(first, second, strict=False))
        if stable(a) != stable(b)
    ]
    if len(first) != len(second):
        diffs.append(f"one episode ran {len(first)} replies, the other {len(second)}")
    if not diffs:
        ctx.report.add(
            "determinism",
            Outcome.PASS,
            f"seed 1234 gives the same {len(first)} replies twice (timing and id keys aside)",
        )
    elif ctx.deterministic:
        ctx.report.add("determinism", Outcome.FAIL, "claims determinism, but seed 1234 diverged", diffs)
    else:
        ctx.report.add("determinism", Outcome.WARN, "not deterministic under a seed (not claimed)", diffs[:3])


def check_bad_frames(ctx: Context) -> None:
    """Bad frames get error replies and the session stays usable."""
    if ctx.schema is None:
        ctx.report.add("bad_frames", Outcome.SKIP, "no usable schema")
        return
    closed = ctx.schema["action"].get("additionalProperties") is False
    # An unknown field where the action schema forbids them, else not an object at all.
    invalid: Any = {"__not_a_field__": [1, 2]} if closed else ["not", "an", "action"]
    bad = [
        ("invalid JSON", "{not json"),
        ("unknown type", json.dumps({"type": "no_such_type"})),
        ("invalid action", json.dumps({"type": "step", "data": invalid})),
    ]
    details: list[str] = []
    wrong = False
    try:
        with ctx.ws() as ws:
            ws.expect({"type": "reset", "data": {}}, "observation")
            for label, frame in bad:
                ws.send_raw(frame)
                reply = ws.recv()
                data = reply.get("data")
                code = data.get("code") if isinstance(data, dict) else None
                if reply["type"] != "error" or not isinstance(code, str):
                    wrong = True
                    shown = json.dumps(reply)[:200]
                    details.append(f"{label}: answered {shown}, expected an error with a code")
                else:
                    details.append(f"{label}: error {code}")
            data = ws.expect({"type": "step", "data": ctx.action(0)}, "observation")
            problems = observation_problems(ctx, data, "observation")
    except ProbeError as exc:
        ctx.report.add("bad_frames", Outcome.FAIL, f"session unusable after bad frames: {exc}", details)
        return
    if wrong or problems:
        ctx.report.add("bad_frames", Outcome.FAIL, "bad frames not answered as errors", details + problems)
        return
    summary = "3 bad frames got error replies; the session still steps"
    ctx.report.add("bad_frames", Outcome.PASS, summary, details)


def check_isolation(ctx: Context) -> None:
    """Two sessions at once: stepping one leaves the other's state alone."""
    if ctx.schema is None:
        ctx.report.add("isolation", Outcome.SKIP, "no usable schema")
        return
    try:
        with ctx.ws() as a, ctx.ws() as b:
            a.expect({"type": "reset", "data": {"episode_id": "validate-a"}}, "observation")
            b.expect({"type": "reset", "data": {"episode_id": "validate-b"}}, "observation")
            stepped, done = 0, False
            while stepped < 2 and not done:  # a step after the end may be refused
                reply = a.expect({"type": "step", "data": ctx.action(stepped)}, "observation")
                done = bool(reply.get("done"))
                stepped += 1
            sa = a.expect({"type": "state"}, "state")
            sb = b.expect({"type": "state"}, "state")
    except ProbeError as exc:
        # a one-session server: an error frame, or a close with 1013 ("try again later")
        if "CAPACITY_REACHED" in str(exc) or "1013" in str(exc):
            ctx.report.add("isolation", Outcome.WARN, "the server refuses a second concurrent session")
        else:
            ctx.report.add("isolation", Outcome.FAIL, f"two concurrent sessions: {exc}")
        return
    problems = []
    if "step_count" in sa and "step_count" in sb and (sa["step_count"], sb["step_count"]) != (stepped, 0):
        problems.append(f"step_count A={sa['step_count']} B={sb['step_count']}, expected {stepped} and 0")
    if sa.get("episode_id") is not None and sa.get("episode_id") == sb.get("episode_id"):
        problems.append(f"both sessions report episode_id {sa['episode_id']!r}")
    if problems:
        ctx.report.add("isolation", Outcome.FAIL, "sessions share state", problems)
    elif "step_count" not in sa:
        ctx.report.add("isolation", Outcome.WARN, "two sessions ran, but state has no step_count to compare")
    else:
        ctx.report.add("isolation", Outcome.PASS, f"2 concurrent sessions: A stepped {stepped}x, B untouched")


def _active_sessions(ctx: Context) -> int | None:
    reply = http("GET", ctx.url + "/sessions", timeout_s=ctx.timeout_s, headers=ctx.headers)
    if reply.status != 200:
        return None  # upstream has no session count
    body = reply.json()
    return int(body["active_sessions"]) if isinstance(body, dict) and "active_sessions" in body else None


def check_close(ctx: Context) -> None:
    """``close`` ends the session: the server closes the socket and frees the slot."""
    try:
        before = _active_sessions(ctx)
        with ctx.ws() as ws:
            ws.expect({"type": "reset", "data": {}}, "observation")
            ws.send_raw(json.dumps({"type": "close"}))
            code = ws.wait_closed(ctx.timeout_s)
        after = _active_sessions(ctx)
        deadline = time.monotonic() + 5
        while before is not None and after is not None and after > before and time.monotonic() < deadline:
            time.sleep(0.05)
            after = _active_sessions(ctx)
    except ProbeError as exc:
        ctx.report.add("close", Outcome.FAIL, str(exc))
        return
    if before is not None and after is not None and after > before:
        ctx.report.add("close", Outcome.FAIL, f"sessions went {before} -> {after} after close")
        return
    counted = f"; sessions {before} -> {after}" if before is not None else ""
    ctx.report.add("close", Outcome.PASS, f"close ended the session (socket closed, code {code}){counted}")
