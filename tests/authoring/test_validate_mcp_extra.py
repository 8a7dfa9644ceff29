"""`openenv validate` without the mcp extra names the extra; it does not blame the env
(issue 20: it said "Environment does not support MCP")."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from openenv.authoring import _checks_extra
from openenv.authoring._checks import Context
from openenv.authoring._probe import HttpReply
from openenv.authoring._report import Outcome, Report

NOT_SUPPORTED = {"jsonrpc": "2.0", "id": 1,
                 "error": {"code": -32603, "message": "Environment does not support MCP", "data": None}}


@pytest.fixture
def no_mcp_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's answer to tools/list when no MCP endpoint is plugged in."""
    def http(method: str, url: str, body: Any = None, **_: Any) -> HttpReply:
        return HttpReply(200, json.dumps(NOT_SUPPORTED).encode(), {"content-type": "application/json"})

    monkeypatch.setattr(_checks_extra, "http", http)


def _mcp_summary(served_here: bool) -> tuple[Outcome, str]:
    ctx = Context(url="http://127.0.0.1:9", report=Report("t"), served_here=served_here)
    _checks_extra.check_mcp(ctx)
    check = ctx.report.get("mcp")
    return check.outcome, check.summary


def test_a_server_started_here_without_the_extra_names_the_extra(no_mcp_reply, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    outcome, summary = _mcp_summary(served_here=True)
    assert outcome is Outcome.SKIP
    assert summary == "/mcp is not served: the 'mcp' extra is not installed here (pip install 'openenv[mcp]')"
    assert "does not support" not in summary


def test_a_remote_server_without_mcp_says_what_serves_it(no_mcp_reply):
    outcome, summary = _mcp_summary(served_here=False)
    assert outcome is Outcome.SKIP
    assert summary.endswith("an openenv server serves /mcp with the 'mcp' extra installed")
