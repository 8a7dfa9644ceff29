"""Drive an OpenEnv server with *upstream* OpenEnv's own client (sync form).

Run with the upstream venv's interpreter (never our own):

    .venv-upstream/bin/python tests/interop/upstream_side/drive.py \
        --url http://127.0.0.1:P [--steps K] [--mode generic|typed] \
        [--reset-kwargs '{"seed": 42}'] [--expect-capacity-error]

Session run: reset -> K steps with messages "hello-<i>" (i = 0..K-1) ->
state -> close, through ``GenericEnvClient`` (generic) or an upstream
``EnvClient`` subclass for the echo models (typed).

``--expect-capacity-error``: open ``--hold`` sessions (default 1) and keep
them open (each does one reset), then open one more client and try a reset;
record what upstream's client raised.  Start the server with
``--max-sessions`` equal to ``--hold``.

``--errors``: one generic session that records, call by call, what upstream's
client raised or returned: an optional step before reset, a reset, each action
in ``--bad-actions`` (a JSON list of raw action dicts), an upstream pydantic
``EchoAction`` passed to ``GenericEnvClient.step`` (it sends ``metadata: {}``),
one valid step (the socket must still be open) and state.

``--plan JSON`` (or ``--plan @FILE``): run several scenarios in ONE process
(upstream's import costs 6-10 s, so batch them).  JSON is a list of objects,
each with a ``name`` and ``kind`` (``session`` | ``capacity`` | ``errors``) plus
any option above under its dest name (``url``, ``mode``, ``steps``,
``reset_kwargs`` (a dict), ``hold``, ``retry_after_free``, ``bad_actions`` (a
list), ``step_before_reset``).  Output: ``{"kind": "plan", "results": [...],
"ok": <all ok>}``; every result carries its ``name``.

Prints exactly ONE JSON line to stdout.  Exit code 0 on success (for the
capacity probe: success means an error was raised by the extra client).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _upstream_guard  # noqa: E402  (must precede any openenv import)

UPSTREAM_VERSION = _upstream_guard.check()


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _result(res: Any) -> Dict[str, Any]:
    return {
        "observation": _jsonable(res.observation),
        "reward": res.reward,
        "done": res.done,
        "metadata": _jsonable(res.metadata),
    }


def _err(exc: BaseException) -> Dict[str, Any]:
    return {
        "error_type": type(exc).__name__,
        "error_module": type(exc).__module__,
        "error": str(exc),
        "cause_type": type(exc.__cause__).__name__ if exc.__cause__ else None,
    }


def _make_client(url: str, mode: str, message_timeout_s: float):
    kwargs = dict(base_url=url, connect_timeout_s=10, message_timeout_s=message_timeout_s)
    if mode == "generic":
        from openenv.core.generic_client import GenericEnvClient

        return GenericEnvClient(**kwargs).sync()
    from echo_models import EchoEnvClient

    return EchoEnvClient(**kwargs).sync()


def _make_action(mode: str, text: str):
    if mode == "generic":
        return {"message": text}
    from echo_models import EchoAction

    return EchoAction(message=text)


def run_session(args) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "kind": "session",
        "mode": args.mode,
        "url": args.url,
        "reset": None,
        "steps": [],
        "state": None,
        "closed": False,
        "error": None,
    }
    reset_kwargs = json.loads(args.reset_kwargs) if args.reset_kwargs else {}
    client = _make_client(args.url, args.mode, args.message_timeout)
    try:
        with client:
            out["reset"] = _result(client.reset(**reset_kwargs))
            for i in range(args.steps):
                res = client.step(_make_action(args.mode, f"{args.prefix}{i}"))
                out["steps"].append(_result(res))
            out["state"] = _jsonable(client.state())
        out["closed"] = True
    except BaseException as exc:  # noqa: BLE001 - report everything
        out["error"] = _err(exc)
        out["traceback_tail"] = traceback.format_exc().splitlines()[-6:]
        try:
            client.close()
        except BaseException:  # noqa: BLE001
            pass
    out["ok"] = out["error"] is None
    return out


def _open_holder(args, settle_s: float = 5.0):
    """A connected client that did one reset.  A slot freed by an earlier scenario
    may take a moment to be released server-side, so CAPACITY_REACHED is retried."""
    deadline = time.monotonic() + settle_s
    while True:
        c = _make_client(args.url, args.mode, args.message_timeout)
        c.connect()
        try:
            return c, c.reset()
        except RuntimeError as exc:
            try:
                c.close()
            except BaseException:  # noqa: BLE001
                pass
            if "CAPACITY_REACHED" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def run_errors(args) -> Dict[str, Any]:
    out: Dict[str, Any] = {"kind": "errors", "mode": args.mode, "url": args.url,
                           "calls": [], "closed": False, "error": None}

    def attempt(label: str, fn) -> None:
        try:
            out["calls"].append({"label": label, "raised": False, "result": fn()})
        except Exception as exc:  # noqa: BLE001 - recorded, the session goes on
            out["calls"].append({"label": label, "raised": True, **_err(exc)})

    client = _make_client(args.url, args.mode, args.message_timeout)
    try:
        with client:
            if args.step_before_reset:
                attempt("step_before_reset",
                        lambda: _result(client.step(_make_action(args.mode, "early"))))
            attempt("reset", lambda: _result(client.reset()))
            for i, raw in enumerate(args.bad_actions or []):
                attempt(f"bad_action_{i}", lambda raw=raw: _result(client.step(raw)))
            if args.mode == "generic":
                from echo_models import EchoAction

                attempt("model_action_into_generic",
                        lambda: _result(client.step(EchoAction(message="typed-into-generic"))))
            attempt("valid_step", lambda: _result(client.step(_make_action(args.mode, "still-open"))))
            attempt("state", lambda: _jsonable(client.state()))
        out["closed"] = True
    except BaseException as exc:  # noqa: BLE001
        out["error"] = _err(exc)
        out["traceback_tail"] = traceback.format_exc().splitlines()[-6:]
    out["ok"] = out["error"] is None
    return out


_RUNNERS = {"session": lambda a: run_session(a), "capacity": lambda a: run_capacity_probe(a),
            "errors": lambda a: run_errors(a)}


def run_plan(parser: argparse.ArgumentParser, plan_arg: str, base: argparse.Namespace) -> Dict[str, Any]:
    text = open(plan_arg[1:]).read() if plan_arg.startswith("@") else plan_arg
    results: List[Dict[str, Any]] = []
    for spec in json.loads(text):
        spec = dict(spec)
        name, kind = spec.pop("name"), spec.pop("kind")
        args = argparse.Namespace(**vars(base))
        for key, value in spec.items():
            if not hasattr(args, key):
                parser.error(f"plan item {name!r}: unknown option {key!r}")
            if key == "reset_kwargs" and value is not None:
                value = json.dumps(value)  # run_session parses it like the CLI option
            setattr(args, key, value)
        t0 = time.monotonic()
        try:
            res = _RUNNERS[kind](args)
        except BaseException as exc:  # noqa: BLE001
            res = {"kind": kind, "ok": False, "error": _err(exc)}
        res["name"] = name
        res["elapsed_s"] = round(time.monotonic() - t0, 3)
        results.append(res)
    return {"kind": "plan", "results": results, "ok": all(r.get("ok") for r in results)}


def _wait_sessions_at_most(url: str, n: int, timeout_s: float = 30.0) -> None:
    """Until our server's ``GET /sessions`` counts at most ``n`` (a closed session ends on
    the server a moment after the client's close; a loaded host: longer)."""
    import urllib.request

    base = url.replace("ws://", "http://", 1).rstrip("/")
    deadline = time.monotonic() + timeout_s
    while True:
        with urllib.request.urlopen(base + "/sessions", timeout=10) as reply:
            active = json.loads(reply.read())["active_sessions"]
        if active <= n:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}: {active} sessions active after {timeout_s:g} s, expected {n} at most")
        time.sleep(0.05)


def run_capacity_probe(args) -> Dict[str, Any]:
    """Against our server (its ``/sessions`` route): hold every slot, then an extra client."""
    out: Dict[str, Any] = {
        "kind": "capacity_probe",
        "mode": args.mode,
        "url": args.url,
        "held": [],
        "extra_client": None,
        "error": None,
    }
    holders: List[Any] = []
    try:
        _wait_sessions_at_most(args.url, 0)  # an earlier probe's sessions have ended
        for _ in range(args.hold):
            c, res = _open_holder(args)
            holders.append(c)
            out["held"].append(_result(res))
        extra = _make_client(args.url, args.mode, args.message_timeout)
        t0 = time.monotonic()
        try:
            extra.connect()
            out["extra_connect"] = "ok"  # upstream accepts the WS handshake first
            res = extra.reset()
            out["extra_client"] = {"raised": False, "result": _result(res)}
        except BaseException as exc:  # noqa: BLE001
            out["extra_client"] = {"raised": True, **_err(exc)}
        out["extra_client"]["elapsed_s"] = round(time.monotonic() - t0, 4)
        # Does the same client object work again once a slot frees up?
        if args.retry_after_free and holders:
            holders.pop().close()
            _wait_sessions_at_most(args.url, len(holders))  # its session has ended on the server
            try:
                res = extra.reset()
                out["extra_after_free"] = {"raised": False, "result": _result(res)}
            except BaseException as exc:  # noqa: BLE001
                out["extra_after_free"] = {"raised": True, **_err(exc)}
        try:
            extra.close()
        except BaseException as exc:  # noqa: BLE001
            out["extra_close_error"] = _err(exc)
    except BaseException as exc:  # noqa: BLE001
        out["error"] = _err(exc)
        out["traceback_tail"] = traceback.format_exc().splitlines()[-6:]
    finally:
        for c in holders:
            try:
                c.close()
            except BaseException:  # noqa: BLE001
                pass
    out["ok"] = out["error"] is None and bool(
        out["extra_client"] and out["extra_client"].get("raised")
    )
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="drive a server with upstream's client")
    ap.add_argument("--url", default=None)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--mode", choices=["generic", "typed"], default="generic")
    ap.add_argument("--prefix", default="hello-")
    ap.add_argument("--reset-kwargs", default=None, help='JSON object, e.g. {"seed": 42}')
    ap.add_argument("--expect-capacity-error", action="store_true")
    ap.add_argument("--hold", type=int, default=1, help="sessions to hold open (probe)")
    ap.add_argument("--retry-after-free", action="store_true")
    ap.add_argument("--errors", action="store_true", help="record errors call by call")
    ap.add_argument("--bad-actions", default=None, help="JSON list of raw actions (--errors)")
    ap.add_argument("--step-before-reset", action="store_true", help="(--errors)")
    ap.add_argument("--plan", default=None, help="JSON list of scenarios, or @FILE")
    ap.add_argument("--message-timeout", type=float, default=20.0)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    args = ap.parse_args(argv)
    if args.plan is None and not args.url:
        ap.error("--url is required (except with --plan)")
    if isinstance(args.bad_actions, str):
        args.bad_actions = json.loads(args.bad_actions)

    def _die() -> None:
        time.sleep(args.max_seconds)
        sys.stdout.write(
            json.dumps({"ok": False, "error": {"error_type": "DriveTimeout",
                                                "error": f"drive.py exceeded {args.max_seconds}s"}})
            + "\n"
        )
        sys.stdout.flush()
        os._exit(3)

    threading.Thread(target=_die, daemon=True).start()

    if args.plan is not None:
        out = run_plan(ap, args.plan, args)
    elif args.expect_capacity_error:
        out = run_capacity_probe(args)
    elif args.errors:
        out = run_errors(args)
    else:
        out = run_session(args)
    out["upstream_version"] = UPSTREAM_VERSION
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0 if out.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
