"""An env's tools reach the agent over MCP (RFC 005): ``HarnessMCPBridge`` in front of a
``StepEnvSessionAdapter`` over a real env server, called by the official ``mcp`` client
SDK, and by Claude Code in a sandbox (installed by scripts/setup.d/57-agents.sh, else
skipped with the reason) through the socket relayed into it, its model a scripted
backend (``ScriptedModel``: a call of the env tool, then an answer) behind the capture proxy."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

from openenv import EnvClient
from openenv.capture import CaptureServer
from openenv.harness import (
    AGENTS,
    CLIAgentAdapter,
    HarnessAction,
    HarnessConfig,
    HarnessEnvironment,
    HarnessMCPBridge,
    ScriptedModel,
    StepEnvSessionAdapter,
    Tool,
    resolve_tool_conflicts,
)
from openenv.harness._agents import TOOLS_PORT, run_with_endpoint
from openenv.sandbox import Sandbox, SandboxConfig
from openenv.server import create_app, serve_in_background
from tests._envs import MODELS, TAction, make_env

from .conftest import AGENTS_DIR, BWRAP_WHY
from .test_harness_env import _Echo

SAY = Tool(
    name="say",
    description="Say something to the env; it answers with what it heard.",
    input_schema={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)
BASH = Tool(name="Bash", description="The env's own shell.", input_schema={"type": "object"})


def _action(name: str, args: dict[str, Any]) -> TAction:
    return TAction(message=args.get("message", ""), fail=args.get("fail"))


@pytest.fixture(scope="module")
def env_server() -> Iterator[Any]:
    env_class = make_env("sync")
    with serve_in_background(create_app(env_class)) as running:
        running.env_class = env_class
        yield running


def _session(url: str, tools: list[Tool]) -> StepEnvSessionAdapter:
    return StepEnvSessionAdapter(
        EnvClient(url, MODELS),
        tool_specs=tools,
        action_builder=_action,
        initial_messages_builder=lambda result, task: [],
    )


def test_tool_names_clashing_with_the_agents_own_are_prefixed() -> None:
    assert [t.name for t in resolve_tool_conflicts([SAY, BASH], {"Bash", "Read"})] == ["say", "env_Bash"]
    with pytest.raises(ValueError, match="reserved"):
        resolve_tool_conflicts([SAY.model_copy(update={"name": "step"})], set())
    with pytest.raises(ValueError, match="Duplicate"):
        resolve_tool_conflicts([SAY, SAY], set())
    with pytest.raises(ValueError, match="both taken"):
        resolve_tool_conflicts([BASH], {"Bash", "env_Bash"})


async def test_the_official_mcp_client_lists_and_calls_the_env_tools(env_server: Any) -> None:
    """The SDK's handshake, ``tools/list`` under the served names, a call that is one env
    step (its observation back as structured content), a failing step as a tool error,
    an unknown tool as a protocol error; the bridge answers nothing but ``/mcp``."""
    session = _session(env_server.url, [SAY, BASH])
    bridge = HarnessMCPBridge(session, renames={"env_Bash": "Bash"})
    try:
        url = bridge.start()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
        async with Client(url) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["say", "env_Bash"]
            assert listed.tools[0].input_schema == SAY.input_schema
            result = await client.call_tool("say", {"message": "hello"})
            assert not result.is_error
            assert result.structured_content is not None
            assert result.structured_content["observation"]["message"] == "hello"
            assert json.loads(result.content[0].text)["reward"] == 1.0  # type: ignore[union-attr]
            failed = await client.call_tool("env_Bash", {"fail": "the env said no"})
            assert failed.is_error
            assert "the env said no" in failed.content[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="Unknown tool: step"):
                await client.call_tool("step", {})
        assert [(e.tool_name, e.arguments) for e in bridge.trace] == [
            ("say", {"message": "hello"}),
            ("Bash", {"fail": "the env said no"}),
        ]
        assert env_server.env_class.tracker.count("step") == 2
        async with httpx.AsyncClient() as http:
            assert (await http.get(url)).status_code == 405
            assert (await http.post(url.replace("/mcp", "/reset"), json={})).status_code == 404
            listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            assert (await http.post(url, json=listing)).status_code == 200
            for header in ({"host": "rebound.example"}, {"origin": "http://rebound.example"}):
                assert (await http.post(url, json=listing, headers=header)).status_code == 403
    finally:
        bridge.stop()
        session.close()
    assert bridge.url is None


async def test_a_harness_env_serves_its_tools_for_the_episode_only(env_server: Any) -> None:
    """``reset`` hands the adapter the resolved tools and the bridge's URL; ``close``
    stops the bridge."""
    seen: list[tuple[list[str], str | None]] = []

    class _Adapter(CLIAgentAdapter):
        async def inject_tools(self, tools: list[Any], bridge_url: str | None = None) -> None:
            seen.append(([t.name for t in tools], bridge_url))
            await super().inject_tools(tools, bridge_url)

        async def start(self, working_directory: str) -> None:
            self.box = object()

    session = _session(env_server.url, [SAY, BASH])
    config = HarnessConfig(name="claude-code", command=["claude"])
    env = HarnessEnvironment(_Adapter(config, capture=None, sandbox=_no_box), tools=session)
    try:
        obs = await env.reset()
        assert obs.metadata["injected_tools"] == ["say", "env_Bash"]  # Bash is Claude Code's own
        names, url = seen[0]
        assert env.bridge is not None
        assert env.bridge.url == url
        async with Client(url) as client:
            assert [t.name for t in (await client.list_tools()).tools] == names
    finally:
        await env.close()
        session.close()
    assert env.bridge is None
    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError):
            await http.post(url, json={})


async def _no_box() -> None:
    raise AssertionError("not started")


@pytest.fixture(scope="module")
def tool_model() -> Iterator[ScriptedModel]:
    scripted = ScriptedModel("true", tool=("say", {"message": "from the agent"}))
    with serve_in_background(scripted.app) as running:
        scripted.url = running.url
        yield scripted


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
async def test_an_agent_cli_calls_an_env_tool_from_its_sandbox(
    agent: str, env_server: Any, tool_model: ScriptedModel
) -> None:
    """The agent, in a sandbox with no network, is configured with MCP server ``env`` at
    a loopback port relayed to the bridge: the scripted model calls the env's ``say`` (as
    the agent names it: Claude Code's ``mcp__env__say``; Codex offers it in a Responses
    ``namespace`` tool, which the proxy forwards as chat function ``mcp__env__say``), the
    env steps, and the step's reply goes back to the model."""
    if BWRAP_WHY:
        pytest.skip(f"agents run under bubblewrap only: {BWRAP_WHY}")
    why = AGENTS[agent].missing(AGENTS_DIR)
    if why:
        pytest.skip(f"{why}: run scripts/setup.d/57-agents.sh once")
    box = Sandbox(SandboxConfig(level="strict"))

    async def sandbox() -> Sandbox:
        return box

    session = _session(env_server.url, [SAY])
    steps = env_server.env_class.tracker.count("step")
    config = HarnessConfig(name=agent, command=[agent], session_timeout_s=120)
    with CaptureServer(llm_url=tool_model.url + "/v1", port=0, admin_key="admin-only") as capture:
        adapter = CLIAgentAdapter(config, capture=capture, sandbox=sandbox, root=AGENTS_DIR)
        env = HarnessEnvironment(adapter, tools=session)
        try:
            await env.reset()
            before = len(tool_model.calls)
            obs = await env.step(HarnessAction(message="Tell the env hello."))
            assert obs.metadata["response"] == "Done.", obs.metadata
            assert obs.metadata["env_tool_calls"][0]["tool_name"] == "say"
            assert obs.metadata["env_tool_calls"][0]["arguments"] == {"message": "from the agent"}
            assert env_server.env_class.tracker.count("step") == steps + 1
            calls = [e for e in obs.metadata["turn_events"] if e["type"] == "tool_call"]
            made = tool_model.calls[before:]
            offered = [t["function"]["name"] for t in made[0].get("tools") or []]
            assert calls[0]["data"]["tool_name"] in offered
            assert calls[0]["data"]["tool_name"] == "mcp__env__say"
            replies = [m for c in made for m in c["messages"] if m.get("role") == "tool"]
            assert any("from the agent" in json.dumps(m.get("content")) for m in replies)
        finally:
            await env.close()
            box.close()
            session.close()


class _Recording(_Echo):
    """The in-process harness, keeping what it was handed."""

    async def inject_tools(self, tools: list[Any], bridge_url: str | None = None) -> None:
        self.injected = ([t.name for t in tools], bridge_url)


async def test_a_fastmcp_servers_tools_as_upstream_hands_them() -> None:
    """``HarnessEnvironment(adapter, mcp=server)``: a FastMCP server's tools (upstream's
    envs keep theirs there) behind the bridge; a tool's failure is a tool error."""
    from fastmcp import FastMCP

    server = FastMCP("env-tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    adapter = _Recording(HarnessConfig(name="echo", command=["echo"]))
    env = HarnessEnvironment(adapter, mcp=server)
    try:
        obs = await env.reset()
        assert obs.metadata["injected_tools"] == ["add"]
        names, url = adapter.injected
        assert url is not None
        async with Client(url) as client:
            assert [t.name for t in (await client.list_tools()).tools] == names
            assert (await client.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
            bad = await client.call_tool("add", {"a": "x"})
            assert bad.is_error
            assert "valid integer" in bad.content[0].text  # type: ignore[union-attr]
    finally:
        await env.close()


_TOOLS_PROBE = textwrap.dedent(
    """
    import json, socket, sys, urllib.request, urllib.error
    def post(path, body):
        req = urllib.request.Request("http://127.0.0.1:TOOLS_PORT" + path, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, None
    listed = post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[1]
    out = {"tools": [t["name"] for t in listed["result"]["tools"]], "reset": post("/reset", {})[0]}
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
        out["bridge_port"] = "connected"
    except OSError as exc:
        out["bridge_port"] = type(exc).__name__
    print(json.dumps(out))
    """
).replace("TOOLS_PORT", str(TOOLS_PORT))


async def test_in_the_sandbox_the_tools_port_reaches_the_bridge_only(
    env_server: Any, capture: CaptureServer
) -> None:
    """A process in the sandbox lists the env's tools on ``127.0.0.1:TOOLS_PORT``; the
    bridge answers nothing but ``/mcp``, and its host port is not reachable from there."""
    if BWRAP_WHY:
        pytest.skip(f"agents run under bubblewrap only: {BWRAP_WHY}")
    session = _session(env_server.url, [SAY])
    bridge = HarnessMCPBridge(session)
    box = Sandbox(SandboxConfig(level="strict"))
    try:
        url = bridge.start()
        port = str(httpx.URL(url).port)
        argv = ["/usr/bin/python3", "-I", "-c", _TOOLS_PROBE, port]
        mine = capture.registry.create()
        run = await run_with_endpoint(box, argv, capture, mine.session_id, timeout_s=60, tools_url=url)
        assert run.exit_code == 0, run.stderr
        assert json.loads(run.stdout) == {
            "tools": ["say"],
            "reset": 404,
            "bridge_port": "ConnectionRefusedError",
        }
    finally:
        box.close()
        bridge.stop()
        session.close()
