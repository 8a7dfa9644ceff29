"""RFC 005: ``HarnessEnvironment`` over an ``AgenticHarnessAdapter``; ``CLIAgentAdapter``
with Claude Code (installed by scripts/setup.d/57-agents.sh, else skipped with the reason) on a
terminal task scored by its verifier, and over two turns of one conversation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import websockets

from openenv.capture import CaptureServer, export_session, to_training_trace
from openenv.harness import (
    AGENTS,
    AgenticHarnessAdapter,
    CLIAgentAdapter,
    HarnessAction,
    HarnessConfig,
    HarnessEnvironment,
    HarnessEvent,
    HarnessEventType,
    HarnessStartupError,
    terminal_task_env,
)
from openenv.harness._route import harness_app
from openenv.harness._scripted import decode
from openenv.sandbox import Sandbox, SandboxConfig
from openenv.server import serve_in_background

from .conftest import AGENTS_DIR, BWRAP_WHY, TASK


class _Echo(AgenticHarnessAdapter):
    """An in-process harness: answers ``echo: <message>``; ``hang`` / ``mute`` misbehave."""

    def __init__(self, config: HarnessConfig) -> None:
        super().__init__(config)
        self.running, self.starts, self.stops = False, 0, 0

    async def start(self, working_directory: str) -> None:
        self.running, self.starts = True, self.starts + 1

    async def stop(self) -> None:
        self.running, self.stops = False, self.stops + 1

    async def inject_tools(self, tools: list[Any], bridge_url: str | None = None) -> None:
        assert tools == []

    async def is_alive(self) -> bool:
        return self.running

    async def send_message_streaming(self, message: str) -> AsyncIterator[HarnessEvent]:
        yield HarnessEvent(type=HarnessEventType.TEXT_OUTPUT, data={"text": message})
        if message == "hang":
            await asyncio.sleep(30)
        if message != "mute":
            yield HarnessEvent(type=HarnessEventType.TURN_COMPLETE, data={"response": f"echo: {message}"})


async def test_turns_timeouts_and_a_missing_turn_complete() -> None:
    adapter = _Echo(HarnessConfig(name="echo", command=["echo"], session_timeout_s=0.5))
    env = HarnessEnvironment(adapter, rubric=lambda action, obs: float(len(action.message)))
    obs = await env.reset()
    assert not obs.done
    assert adapter.running
    obs = await env.step(HarnessAction(message="hi"))
    assert obs.metadata["response"] == "echo: hi"
    assert obs.reward == 2.0
    assert [e["type"] for e in obs.metadata["turn_events"]] == ["text_output", "turn_complete"]
    assert (await env.state()).step_count == 1
    obs = await env.step(HarnessAction(message="hang"))  # past session_timeout_s: the episode ends
    assert obs.done
    assert obs.metadata["error_type"] == "turn_timeout"
    assert not adapter.running
    await env.reset()
    obs = await env.step(HarnessAction(message="mute"))
    assert obs.done
    assert obs.metadata["error_type"] == "harness_crashed"
    assert "TURN_COMPLETE" in obs.metadata["error"]
    assert env.trajectory[-1].type is HarnessEventType.ERROR
    await env.close()
    assert adapter.stops >= 3


async def _no_box() -> None:
    raise AssertionError("not started")


def test_an_unknown_agent_is_a_startup_error(capture: CaptureServer) -> None:
    with pytest.raises(HarnessStartupError, match="no agent 'gemini'"):
        CLIAgentAdapter(HarnessConfig(name="gemini", command=["gemini"]), capture=capture, sandbox=_no_box)


async def test_the_harness_websocket_route() -> None:
    """Upstream's /harness frames: session_started, a turn's events to turn_complete, a
    protocol_error that leaves the connection usable, an overlong turn ending the session
    with an error event, and capacity."""
    made: list[_Echo] = []

    def make_env() -> HarnessEnvironment:
        made.append(_Echo(HarnessConfig(name="echo", command=["echo"], session_timeout_s=0.5)))
        return HarnessEnvironment(made[-1])

    with serve_in_background(harness_app(make_env, max_sessions=1)) as running:
        url = running.url.replace("http", "ws", 1) + "/harness"
        async with websockets.connect(url) as ws:
            started = json.loads(await ws.recv())
            assert started["type"] == "session_started"
            assert started["data"]["harness"] == "echo"
            async with websockets.connect(url) as second:  # one session at a time
                assert json.loads(await second.recv())["data"]["code"] == "CAPACITY_REACHED"
            await ws.send("{not json")
            assert json.loads(await ws.recv())["type"] == "protocol_error"
            await ws.send(json.dumps({"type": "message", "content": "hi"}))
            frames = [json.loads(await ws.recv()) for _ in range(2)]
            assert [f["type"] for f in frames] == ["text_output", "turn_complete"]
            assert frames[-1]["data"]["response"] == "echo: hi"
            await ws.send(json.dumps({"type": "message", "content": "hang"}))
            frames = [json.loads(await ws.recv()) for _ in range(2)]
            assert frames[-1]["type"] == "error"
            assert "exceeded" in frames[-1]["data"]["message"]
            with pytest.raises(websockets.ConnectionClosed):
                await ws.recv()
        for _ in range(1000):  # the env is closed once the socket is gone (bounded: 20 s)
            if made[0].stops >= 2:
                break
            await asyncio.sleep(0.02)
        assert made[0].stops >= 2
        assert not made[0].running


def _claude() -> None:
    if BWRAP_WHY:
        pytest.skip(f"agents run under bubblewrap only: {BWRAP_WHY}")
    why = AGENTS["claude-code"].missing(AGENTS_DIR)
    if why:
        pytest.skip(f"{why}: run scripts/setup.d/57-agents.sh once")


async def test_claude_code_on_a_terminal_task_scored_by_its_verifier(capture: CaptureServer) -> None:
    _claude()
    env = terminal_task_env("claude-code", TASK, capture, root=AGENTS_DIR, pool_size=0)
    try:
        await env.reset()
        obs = await env.step(HarnessAction(message="Count the ERROR lines of app.log into errors.txt."))
        assert obs.metadata["response"] == "Done."
        assert obs.reward == 1.0
        assert obs.done
        calls = [e for e in obs.metadata["turn_events"] if e["type"] == "tool_call"]
        assert calls[0]["data"]["tool_name"] == "Bash"
        assert "grep -c ERROR" in calls[0]["data"]["arguments"]["command"]
        session = env.adapter.session  # type: ignore[attr-defined]
        llm = [e for e in obs.metadata["turn_events"] if e["type"] == "llm_response"]
        assert len(llm) == len(session.graph) >= 2
    finally:
        await env.close()


async def test_claude_code_goes_on_with_its_conversation_across_turns(capture: CaptureServer) -> None:
    """Turn 2 runs ``claude --continue``: its calls extend turn 1's, so the session's
    calls still form one path, and the trace has them all."""
    _claude()
    config = HarnessConfig(name="claude-code", command=["claude"], session_timeout_s=120)
    box = Sandbox(SandboxConfig(level="strict"))

    async def sandbox() -> Sandbox:
        return box

    env = HarnessEnvironment(CLIAgentAdapter(config, capture=capture, sandbox=sandbox, root=AGENTS_DIR))
    try:
        await env.reset()
        first = await env.step(HarnessAction(message="Count the ERROR lines."))
        second = await env.step(HarnessAction(message="Thanks. Anything else?"))
        assert not first.done
        assert second.metadata["turn_number"] == 2
        session = env.adapter.session  # type: ignore[attr-defined]
        n_first = sum(e["type"] == "llm_response" for e in first.metadata["turn_events"])
        n_second = sum(e["type"] == "llm_response" for e in second.metadata["turn_events"])
        assert n_first >= 2
        assert n_second >= 1
        assert len(session.graph) == n_first + n_second
        assert session.graph.stats()["n_roots"] == 1
        trace = to_training_trace(session.graph, export_session(session))
        last_prompt = decode(trace.turns[-1].prompt_token_ids)
        assert "Count the ERROR lines." in last_prompt
        assert "Thanks. Anything else?" in last_prompt
    finally:
        await env.close()
        box.close()
