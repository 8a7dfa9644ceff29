"""The anthropic policy through the official ``anthropic`` SDK, against a small
Messages-API server on loopback (the real API needs an account): text on a text env,
tool_use / tool_result turns on a tool env, the key refused with 401."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="the eval extra brings the anthropic SDK")

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from openenv.eval import EvalConfig, load_trajectories, run_eval
from openenv.server import serve_in_background

ROOT = Path(__file__).resolve().parents[2]
KEY = "test-key"
pytestmark = pytest.mark.timeout(300)


class MessagesServer:
    """Answers /v1/messages: the text 'hello there' without tools; with tools, a cell
    of code first and a submit once a tool_result came back. Keeps every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self.messages, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ]
        )

    def refused(self, request: Request) -> JSONResponse | None:
        if KEY in (
            request.headers.get("x-api-key"),
            request.headers.get("authorization", "").removeprefix("Bearer "),
        ):
            return None  # the SDK sends the key as x-api-key (or, in some versions, as a bearer token)
        error = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        return JSONResponse(error, 401)

    async def models(self, request: Request) -> JSONResponse:
        model = {
            "id": "claude-test",
            "type": "model",
            "display_name": "test",
            "created_at": "2025-01-01T00:00:00Z",
        }
        return self.refused(request) or JSONResponse(
            {"data": [model], "has_more": False, "first_id": "claude-test", "last_id": "claude-test"}
        )

    async def messages(self, request: Request) -> JSONResponse:
        if (refused := self.refused(request)) is not None:
            return refused
        body = await request.json()
        self.requests.append(body)
        names = [tool["name"] for tool in body.get("tools", [])]
        last = body["messages"][-1]["content"]
        answered = isinstance(last, list) and last[0].get("type") == "tool_result"
        if not names:
            content: list[dict[str, Any]] = [{"type": "text", "text": "hello there"}]
        elif "add" in names:  # an MCP server's own tools: add, then submit what it said
            said = json.loads(last[0]["content"])["text"] if answered else ""  # the observation, as JSON
            call = ("submit", {"answer": said}) if answered else ("add", {"a": 2, "b": 3})
            content = [
                {"type": "tool_use", "id": f"toolu_{len(self.requests)}", "name": call[0], "input": call[1]}
            ]
        else:
            args = {"code": "", "submit": True} if answered else {"code": "x = 1"}
            tool = body["tools"][0]["name"]
            content = [{"type": "tool_use", "id": f"toolu_{len(self.requests)}", "name": tool, "input": args}]
        return JSONResponse(
            {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": "tool_use" if body.get("tools") else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": 3},
            }
        )


@pytest.fixture
def server():
    double = MessagesServer()
    with serve_in_background(double.app) as running:
        running.double = double
        yield running


def _spec(server) -> str:
    options = "api_key_env=H8_ANTHROPIC_KEY&max_tokens=64&temperature=0.5"
    return f"anthropic:claude-test?base_url={server.url}&{options}"


def test_text_env_takes_the_reply(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H8_ANTHROPIC_KEY", KEY)
    results = run_eval(
        EvalConfig(
            env=str(ROOT / "envs" / "echo_env"), policy=_spec(server), out=tmp_path, count=2, max_turns=1
        )
    )
    assert results["errors"] == 0
    assert results["prompt_tokens"] == 22
    assert [r["temperature"] for r in server.double.requests] == [0.5, 0.5]
    for t in load_trajectories(tmp_path):
        assert t.turns[0].action == {"message": "hello there"}
        assert t.reward == pytest.approx(1.1)


def test_tool_env_plays_tool_use_and_answers_with_tool_result(
    server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("H8_ANTHROPIC_KEY", KEY)
    results = run_eval(
        EvalConfig(
            env=str(ROOT / "envs" / "coding_env"),
            policy=_spec(server),
            out=tmp_path,
            ids=["two_sum"],
            max_turns=4,
        )
    )
    assert results["errors"] == 0
    [t] = load_trajectories(tmp_path)
    assert t.status == "done"
    assert [turn.action for turn in t.turns] == [{"code": "x = 1"}, {"code": "", "submit": True}]
    assert t.reward == 0.0  # `x = 1` solves nothing: graded, not an error
    second = server.double.requests[-1]
    [result] = second["messages"][-1]["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_1"
    assert [tool["name"] for tool in second["tools"]] == ["code_action"]


def test_a_refused_key_is_one_line_and_exit_2(server, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "openenv",
            "eval",
            str(ROOT / "envs" / "echo_env"),
            "-p",
            _spec(server),
            "-o",
            str(tmp_path / "o"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "H8_ANTHROPIC_KEY": "wrong"},
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "refused the key (401)" in line


def test_an_mcp_env_offers_its_own_tools(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H8_ANTHROPIC_KEY", KEY)
    results = run_eval(
        EvalConfig(
            env="tests.mcp._mcp_envs:ToolServerEnv", policy=_spec(server), out=tmp_path, count=1, max_turns=4
        )
    )
    assert results["errors"] == 0
    [t] = load_trajectories(tmp_path)
    assert [turn.action for turn in t.turns] == [
        {"tool": "add", "arguments": {"a": 2, "b": 3}},
        {"tool": "submit", "arguments": {"answer": "5"}},
    ]
    assert (t.status, t.reward, t.passed) == ("done", 1.0, True)
    offered = [tool["name"] for tool in server.double.requests[0]["tools"]]
    assert {"add", "count", "submit"} <= set(offered)  # the server's tools, not one generic call tool
