"""A real agent CLI in the terminal env's Docker image, against the capture proxy.

The image is built once per run by whichever test needs it first (tests/_terminal_image.py;
here too, when this file runs alone): without a Docker engine, or without the agent
installed by scripts/setup.d/57-agents.sh, it skips, saying which.
One container per run, ``--network none``: the session's endpoint socket is bound in and
relayed to ``127.0.0.1:8000`` inside (``openenv.harness.run_agent_in_image``; RFC 005's
``HarnessEnvironment`` over a ``CLIAgentAdapter`` placed ``InImage``, served on
``/harness``, runs each turn that way). The model
is ``ScriptedModel`` (a test double of vLLM: a call of the agent's shell tool running the
task's command, then an answer; an agent given the env's tools over MCP calls the env's
``say`` instead) behind the real capture proxy. The env's tools are a real env server's
session, served by the harness env's ``HarnessMCPBridge``, its socket bound in and
relayed to ``127.0.0.1:8001`` inside.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from openenv import EnvClient
from openenv._exceptions import ValidationFailed
from openenv.capture import CaptureServer, export_session, to_training_trace
from openenv.harness import (
    AGENTS,
    CLIAgentAdapter,
    HarnessAction,
    HarnessConfig,
    HarnessEnvironment,
    HarnessStartupError,
    ImageAgentRun,
    InImage,
    ScriptedModel,
    StepEnvSessionAdapter,
    TerminalTaskHarness,
    Tool,
    harness_app,
    run_agent_in_image,
    run_in_image,
    terminal_task_env,
)
from openenv.harness._image_agent import TASK_INSTRUCTION
from openenv.harness._scripted import decode
from openenv.server import create_app, serve_in_background
from tests._envs import MODELS, TAction, make_env

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

IMAGE = "openenv-terminal:latest"  # named only by the tests refused before any container starts
TASK = "count-errors"


@pytest.fixture(scope="module")
def image() -> str:
    from tests._terminal_image import terminal_image

    return terminal_image()  # built here when no earlier test of this run built it


@pytest.fixture(scope="module")
def capture() -> Iterator[CaptureServer]:
    # an agent offered the env's ``say`` (over MCP) calls it; one that is not runs the command
    model = ScriptedModel("grep -c ERROR app.log > errors.txt", tool=("say", {"message": "from the image"}))
    with serve_in_background(model.app) as backend:
        model.url = backend.url
        with CaptureServer(llm_url=backend.url + "/v1", port=0, admin_key="admin-only") as server:
            server.model = model  # type: ignore[attr-defined]
            yield server


@pytest.mark.parametrize("name", ["codex", "mini-swe-agent", "opencode"])  # Claude Code: the next test
async def test_an_agent_solves_a_task_in_the_image_and_every_call_is_captured(
    name: str, image: str, capture: CaptureServer
) -> None:
    why = AGENTS[name].missing()
    if why:
        pytest.skip(why)
    model: ScriptedModel = capture.model  # type: ignore[attr-defined]
    session = capture.registry.create(agent=name)
    before = len(model.calls)
    run = await run_agent_in_image(image, name, TASK, capture, session.session_id, timeout_s=120)
    assert run.exit_code == 0, run.stderr[-2000:] or run.stdout[-2000:]
    assert run.level == "rlimits"  # the env's own sandbox, inside the container
    assert run.reward == 1.0  # the command ran in the session's workdir: the verifier says so
    made = model.calls[before:]
    assert run.calls == len(made) >= 2
    assert len(session.graph) == run.calls
    assert session.upstream_errors == 0
    doc = export_session(session)
    agent_paths = [p for p in doc["sequences"] if p["role"] == "agent"]
    assert len(agent_paths) == 1  # (OpenCode's toolless title call is its own, auxiliary, path)
    assert all(p["role"] == "auxiliary" for p in doc["sequences"] if p is not agent_paths[0])
    trace = to_training_trace(session.graph, doc)
    assert any("grep -c ERROR" in decode(t.completion_token_ids) for t in trace.turns)


async def test_claude_code_in_the_image_as_a_harness_env_served_on_harness(
    image: str, capture: CaptureServer
) -> None:
    """RFC 005's classes with the image placement, over the wire: ``/harness`` serves a
    ``terminal_task_env(..., image=...)`` per connection; one turn told the task's own
    instruction runs Claude Code in a container, where its ``Bash`` call runs the command
    in the image's sandbox, the task's verifier scores it (``turn_complete``'s reward), and
    every model call is a frame, a capture graph node and a training trace turn."""
    name = "claude-code"
    why = AGENTS[name].missing()
    if why:
        pytest.skip(why)
    model: ScriptedModel = capture.model  # type: ignore[attr-defined]
    made: list[TerminalTaskHarness] = []

    def make_env() -> TerminalTaskHarness:
        made.append(terminal_task_env(name, TASK, capture, image=image))
        made[-1].adapter.config.session_timeout_s = 120
        return made[-1]

    before = len(model.calls)
    with serve_in_background(harness_app(make_env)) as running:
        async with websockets.connect(running.url.replace("http", "ws", 1) + "/harness") as ws:
            started = json.loads(await ws.recv())
            assert started["type"] == "session_started", started
            await ws.send(json.dumps({"type": "message", "content": TASK_INSTRUCTION}))
            frames: list[dict[str, Any]] = []
            for _ in range(200):
                frames.append(json.loads(await ws.recv()))
                if frames[-1]["type"] in ("turn_complete", "error"):
                    break
    last = frames[-1]
    assert last["type"] == "turn_complete", last
    assert (last["data"]["reward"], last["data"]["done"]) == (1.0, True)  # the verifier, in the container
    assert last["data"]["reward_breakdown"]
    calls = [f["data"] for f in frames if f["type"] == "tool_call"]
    assert calls[0]["tool_name"] == "Bash"
    assert "grep -c ERROR" in calls[0]["arguments"]["command"]
    adapter = made[0].adapter
    assert isinstance(adapter, CLIAgentAdapter)
    run, session = adapter.last_run, adapter.session
    assert isinstance(run, ImageAgentRun)
    assert run.exit_code == 0
    assert run.level == "rlimits"  # the image's own sandbox
    made_calls = model.calls[before:]
    assert "contain `ERROR`" in json.dumps(made_calls[0]["messages"])  # the task's instruction
    responses = [f for f in frames if f["type"] == "llm_response"]
    assert len(responses) == run.calls == len(made_calls) == len(session.graph) >= 2
    trace = to_training_trace(session.graph, export_session(session))
    assert len(trace.turns) == run.calls  # every call, token-exact
    assert any("grep -c ERROR" in decode(t.completion_token_ids) for t in trace.turns)


SAY = Tool(
    name="say",
    description="Say something to the env; it answers with what it heard.",
    input_schema={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)


@pytest.fixture(scope="module")
def env_tools() -> Iterator[tuple[Any, StepEnvSessionAdapter]]:
    """A real env server's session, its one tool ``say`` a step."""
    env_class = make_env("sync")
    with serve_in_background(create_app(env_class)) as running:
        session = StepEnvSessionAdapter(
            EnvClient(running.url, MODELS),
            tool_specs=[SAY],
            action_builder=lambda name, args: TAction(message=args.get("message", "")),
            initial_messages_builder=lambda result, task: [],
        )
        try:
            yield env_class, session
        finally:
            session.close()


@pytest.mark.parametrize("name", ["claude-code", "codex"])
async def test_an_agent_in_the_image_calls_an_env_tool_over_mcp(
    name: str, image: str, capture: CaptureServer, env_tools: tuple[Any, StepEnvSessionAdapter]
) -> None:
    """The harness env (image placement, ``tools=`` an env session) serves the env's tools
    on a ``HarnessMCPBridge``; the agent, in its container, is configured with MCP server
    ``env`` at ``127.0.0.1:8001``, relayed to the bridge through a socket of its own: the
    scripted model calls ``say`` (Claude Code's ``mcp__env__say``), the env steps once,
    the step's reply goes back to the model, and the call is in the observation's
    ``env_tool_calls`` and the capture trace. (Codex takes its MCP tools in a Responses
    ``namespace`` tool that the proxy forwards as chat function ``mcp__env__say``; about
    8 s a run, as Claude Code's.)"""
    why = AGENTS[name].missing()
    if why:
        pytest.skip(why)
    env_class, tools = env_tools
    model: ScriptedModel = capture.model  # type: ignore[attr-defined]
    env = terminal_task_env(name, TASK, capture, image=image, tools=tools)
    env.adapter.config.session_timeout_s = 120
    steps, before = env_class.tracker.count("step"), len(model.calls)
    try:
        reset = await env.reset()
        assert reset.metadata["injected_tools"] == ["say"]
        obs = await env.step(HarnessAction(message=TASK_INSTRUCTION))
    finally:
        await env.close()
    assert "error" not in obs.metadata, obs.metadata.get("error")
    assert env_class.tracker.count("step") == steps + 1  # the call reached the env
    called = [(c["tool_name"], c["arguments"]) for c in obs.metadata["env_tool_calls"]]
    assert called == [("say", {"message": "from the image"})]
    made = model.calls[before:]
    session = env.adapter.session
    assert len(made) == len(session.graph) >= 2
    assert "mcp__env__say" in json.dumps(made[0].get("tools") or [])
    replies = [m for c in made for m in c["messages"] if m.get("role") == "tool"]
    assert any("from the image" in json.dumps(m.get("content")) for m in replies)  # the env's answer
    trace = to_training_trace(session.graph, export_session(session))
    assert any("mcp__env__say" in decode(t.completion_token_ids) for t in trace.turns)
    assert (obs.reward, obs.done) == (0.0, True)  # the task's command was not run: the verifier still scored


async def test_an_image_placement_without_its_image_is_refused_at_reset(
    image: str, capture: CaptureServer
) -> None:
    config = HarnessConfig(name="claude-code", command=["claude"])
    if AGENTS["claude-code"].missing():
        pytest.skip(AGENTS["claude-code"].missing())
    adapter = CLIAgentAdapter(config, capture=capture, image=InImage("openenv-no-such-image:nope", TASK))
    env = HarnessEnvironment(adapter)
    with pytest.raises(HarnessStartupError, match="no image openenv-no-such-image:nope"):
        await env.reset()
    assert not await adapter.is_alive()


_PROBE = textwrap.dedent(
    """
    import json, socket, sys, urllib.request, urllib.error
    def get(path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:8000" + path, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
    out = {"sessions": get("/sessions"), "health": get("/health"), "instruction": sys.argv[2][:40],
           "interfaces": [name for _, name in socket.if_nameindex()]}
    for name, addr in (("host_proxy", ("172.17.0.1", int(sys.argv[1]))), ("outside", ("1.1.1.1", 80)),
                       ("env_port", ("127.0.0.1", 8001))):
        try:
            socket.create_connection(addr, timeout=3).close()
            out[name] = "connected"
        except OSError as exc:
            out[name] = type(exc).__name__
    print(json.dumps(out))
    """
)


async def test_in_the_image_the_agent_reaches_only_its_own_session(
    image: str, capture: CaptureServer
) -> None:
    """A process where the agent runs: loopback is its only network, its endpoint answers
    the model routes only, and nothing else answers: not the host (the proxy's port), not
    the outside, no other port."""
    mine = capture.registry.create()
    argv = ["/usr/bin/python3", "-I", "-c", _PROBE, str(capture.port), "{instruction}"]
    run = await run_in_image(image, argv, capture, mine.session_id, TASK, timeout_s=60)
    assert run.exit_code == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["interfaces"] == ["lo"]  # --network none
    assert (seen["sessions"], seen["health"]) == (404, 404)
    assert seen["instruction"]  # the task's instruction, put in by the driver
    assert seen["host_proxy"] in ("OSError", "ConnectionRefusedError", "TimeoutError")
    assert seen["outside"] in ("OSError", "ConnectionRefusedError", "TimeoutError")
    assert seen["env_port"] == "ConnectionRefusedError"
    assert sorted(run.refused) == ["GET /health", "GET /sessions"]
    assert run.reward == 0.0  # nothing was done: the verifier says so


async def test_an_agent_that_needs_node_is_refused_saying_so(capture: CaptureServer, tmp_path: Any) -> None:
    """Gemini CLI is a Node.js program: refused before any container starts."""
    home = tmp_path / "gemini-cli" / "node_modules" / ".bin"
    home.mkdir(parents=True)
    (home / "gemini").write_text("#!/bin/sh\n")
    (home / "gemini").chmod(0o755)
    with pytest.raises(ValidationFailed, match=r"starts through Node\.js"):
        await run_agent_in_image(IMAGE, "gemini-cli", TASK, capture, "unused", root=tmp_path)


async def test_env_tools_an_agent_cannot_take_or_off_loopback_are_refused(
    capture: CaptureServer, tmp_path: Any
) -> None:
    """mini-swe-agent takes no MCP tools, and the bridge must be on loopback: each refused
    before any container starts, saying why."""
    home = tmp_path / "mini-swe-agent" / "bin"
    home.mkdir(parents=True)
    (home / "mini").write_text("#!/bin/sh\n")
    (home / "mini").chmod(0o755)
    session = capture.registry.create()
    with pytest.raises(ValidationFailed, match="not given env tools over MCP"):
        await run_agent_in_image(
            IMAGE, "mini-swe-agent", TASK, capture, session.session_id, root=tmp_path,
            tools_url="http://127.0.0.1:9/mcp",
        )  # fmt: skip
    with pytest.raises(ValidationFailed, match="on loopback"):
        await run_in_image(
            IMAGE, ["true"], capture, session.session_id, TASK, tools_url="http://10.0.0.1:80/mcp"
        )
    assert len(session.graph) == 0


async def test_an_unknown_task_fails_the_run_with_the_reason(image: str, capture: CaptureServer) -> None:
    from openenv._exceptions import ProviderError

    session = capture.registry.create()
    with pytest.raises(ProviderError, match="no-such-task"):
        await run_in_image(image, ["true"], capture, session.session_id, "no-such-task", timeout_s=30)
    assert len(session.graph) == 0
