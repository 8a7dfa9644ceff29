"""Upstream OpenEnv 0.10.0's own client drives OUR echo server.

Two of our servers run as ``python -m openenv serve envs/echo_env`` subprocesses: one
with default settings and one with ``--max-sessions 1``. ONE ``drive.py --plan`` run
(upstream's ``GenericEnvClient`` and a typed upstream ``EnvClient``, sync form) does
every scenario; each test below checks one part of its JSON report.

Upstream's client offers no subprotocol, so every connection here is a plain one and
our server must behave exactly like upstream's (rfcs/0001 section 4.4).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytestmark = pytest.mark.upstream

READY = "Echo environment ready!"
RESET_OBS = {"echoed_message": READY, "message_length": 0, "metadata": {}}
BAD_ACTIONS = [{"message": 5}, {"message": "x", "extra": 1}, {}]


@pytest.fixture(scope="module")
def ours(upstream_python: Path, interop: SimpleNamespace) -> Iterator[tuple[Any, Any]]:
    """Our server twice: default settings, and ``--max-sessions 1``."""
    normal, limited = interop.start_ours(interop.OurServer(), interop.OurServer(max_sessions=1))
    try:
        yield normal, limited
    finally:
        normal.stop()
        limited.stop()


@pytest.fixture(scope="module")
def report(
    ours: tuple[Any, Any], interop: SimpleNamespace, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """Every scenario, in one upstream process."""
    normal, limited = ours
    plan = [
        {"name": "generic", "kind": "session", "url": normal.url, "mode": "generic", "steps": 3},
        {"name": "typed", "kind": "session", "url": normal.url, "mode": "typed", "steps": 3,
         "reset_kwargs": {"seed": 42, "episode_id": "ep-typed"}},
        {"name": "generic_seeded", "kind": "session", "url": normal.url, "mode": "generic", "steps": 1,
         "reset_kwargs": {"seed": 42}},
        {"name": "ws_scheme", "kind": "session", "url": f"ws://127.0.0.1:{normal.port}", "mode": "generic",
         "steps": 1},
        {"name": "errors", "kind": "errors", "url": normal.url, "mode": "generic",
         "step_before_reset": True, "bad_actions": BAD_ACTIONS},
        {"name": "capacity_generic", "kind": "capacity", "url": limited.url, "mode": "generic", "hold": 1,
         "retry_after_free": True},
        {"name": "capacity_typed", "kind": "capacity", "url": limited.url, "mode": "typed", "hold": 1,
         "retry_after_free": True},
    ]
    plan_file = tmp_path_factory.mktemp("plan") / "plan.json"
    plan_file.write_text(json.dumps(plan))
    out = interop.run_upstream_script("drive.py", ["--plan", f"@{plan_file}", "--max-seconds", "120"])
    results = {r["name"]: r for r in out["results"]}
    assert set(results) == {p["name"] for p in plan}, out
    return {"results": results, "raw": out}


def _ok(report: dict[str, Any], name: str) -> dict[str, Any]:
    res: dict[str, Any] = report["results"][name]
    assert res.get("ok"), json.dumps(res, indent=1)
    return res


def _check_step(step: dict[str, Any], text: str, typed: bool) -> None:
    obs = dict(step["observation"])
    if typed:  # upstream's typed Observation also carries done/reward
        assert obs.pop("done") is False
        assert obs.pop("reward") == len(text) * 0.1
    assert obs == {"echoed_message": text, "message_length": len(text), "metadata": {}}
    assert step["reward"] == len(text) * 0.1
    assert step["done"] is False
    assert step["metadata"] is None  # upstream's StepResult.metadata: absent on the wire


def _check_reset(reset: dict[str, Any], typed: bool) -> None:
    obs = dict(reset["observation"])
    if typed:
        assert obs.pop("done") is False
        assert obs.pop("reward") == 0.0
    assert obs == RESET_OBS
    assert reset["reward"] == 0.0
    assert reset["done"] is False


def test_upstream_version(report: dict[str, Any]) -> None:
    assert report["raw"]["upstream_version"].startswith("0.10."), report["raw"]


def test_generic_client_episode(report: dict[str, Any]) -> None:
    """reset -> 3 steps -> state -> close through ``GenericEnvClient`` (dicts)."""
    res = _ok(report, "generic")
    _check_reset(res["reset"], typed=False)
    assert len(res["steps"]) == 3
    for i, step in enumerate(res["steps"]):
        _check_step(step, f"hello-{i}", typed=False)
    state = res["state"]
    assert isinstance(state["episode_id"], str)
    assert state["episode_id"]
    assert state["step_count"] == 3
    # Our echo env's state has one more field (State allows extras); upstream's
    # generic client returns the state dict verbatim.
    assert set(state) == {"episode_id", "step_count", "total_chars"}
    assert res["closed"] is True


def test_typed_client_episode_with_seed_and_episode_id(report: dict[str, Any]) -> None:
    """The typed upstream client: ``reset(seed=42, episode_id=...)`` reaches our env."""
    res = _ok(report, "typed")
    _check_reset(res["reset"], typed=True)
    for i, step in enumerate(res["steps"]):
        _check_step(step, f"hello-{i}", typed=True)
    assert res["state"]["episode_id"] == "ep-typed"
    assert res["state"]["step_count"] == 3
    assert res["closed"] is True


def test_seeded_reset(report: dict[str, Any]) -> None:
    """A seeded reset is accepted and (the echo env ignores the seed) gives the usual
    observation; the episode then runs as usual."""
    res = _ok(report, "generic_seeded")
    _check_reset(res["reset"], typed=False)
    assert res["reset"] == report["results"]["generic"]["reset"]
    _check_step(res["steps"][0], "hello-0", typed=False)
    assert res["state"]["step_count"] == 1


def test_ws_scheme_base_url(report: dict[str, Any]) -> None:
    """Upstream's client given ``ws://host:port`` connects to ``/ws`` of ours too."""
    res = _ok(report, "ws_scheme")
    _check_step(res["steps"][0], "hello-0", typed=False)


def test_errors_reach_upstream_client_and_socket_stays_open(report: dict[str, Any]) -> None:
    """Invalid actions: upstream's client raises its ``RuntimeError("Server error: ...
    (code: VALIDATION_ERROR)")`` and the same socket serves the next step.

    ``GenericEnvClient.step(EchoAction(...))`` sends ``{"metadata": {}, "message": ...}``:
    ours accepts ``metadata`` inside an action, as upstream's ``Action`` does.

    Documented difference (rfcs/0001 section 9): ``step`` before ``reset`` is an error
    (``RESET_REQUIRED``) on ours; upstream's server steps whatever env it has. Upstream's
    client turns it into the same ``RuntimeError`` as any error frame.
    """
    res = _ok(report, "errors")
    calls = {c["label"]: c for c in res["calls"]}
    early = calls["step_before_reset"]
    assert early["raised"], early
    assert early["error_type"] == "RuntimeError", early
    assert "(code: RESET_REQUIRED)" in early["error"]

    assert calls["reset"]["raised"] is False
    _check_reset(calls["reset"]["result"], typed=False)
    for i in range(len(BAD_ACTIONS)):
        bad = calls[f"bad_action_{i}"]
        assert bad["raised"], bad
        assert (bad["error_module"], bad["error_type"]) == ("builtins", "RuntimeError"), bad
        assert bad["error"].startswith("Server error: "), bad
        assert bad["error"].endswith("(code: VALIDATION_ERROR)"), bad

    model = calls["model_action_into_generic"]
    assert model["raised"] is False, model
    _check_step(model["result"], "typed-into-generic", typed=False)
    assert calls["valid_step"]["raised"] is False, calls["valid_step"]
    _check_step(calls["valid_step"]["result"], "still-open", typed=False)
    assert calls["state"]["result"]["step_count"] == 2  # failed steps did not count
    assert res["closed"] is True


@pytest.mark.parametrize("mode", ["generic", "typed"])
def test_capacity_reached_then_recovers(report: dict[str, Any], mode: str) -> None:
    """``--max-sessions 1``, one session held: upstream's client connects (101), its
    first ``reset`` raises ``RuntimeError("Server error: Server at capacity: 1/1 ...
    (code: CAPACITY_REACHED)")`` exactly as against upstream's own server; once the
    held session closes, the SAME client object reconnects and resets.

    Our server closes that socket with 1013 where upstream's uses 1000
    (rfcs/0001 sections 4.4 and 7); upstream's client does not look at the code.
    """
    res = _ok(report, f"capacity_{mode}")
    assert res["extra_connect"] == "ok"
    extra = res["extra_client"]
    assert extra["raised"] is True
    assert (extra["error_module"], extra["error_type"]) == ("builtins", "RuntimeError"), extra
    assert extra["error"] == (
        "Server error: Server at capacity: 1/1 sessions active. Cannot accept new connections. "
        "(code: CAPACITY_REACHED)"
    )
    assert extra["cause_type"] is None
    after = res["extra_after_free"]
    assert after["raised"] is False, after
    _check_reset(after["result"], typed=mode == "typed")


def test_our_server_released_every_session(report: dict[str, Any], ours: tuple[Any, Any]) -> None:
    """Upstream's ``close()`` (a ``{"type": "close"}`` frame, then Close 1000) ends the
    session on ours: nothing is left open after the whole plan."""
    for server in ours:
        server.wait_sessions(0)
