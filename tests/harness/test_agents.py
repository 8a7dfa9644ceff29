"""Real agent CLIs in a terminal env session's sandbox, every model call captured.

The agents (mini-swe-agent from PyPI; Claude Code, Codex, Gemini CLI, OpenCode from npm) are installed under
``agents_dir()`` by ``openenv.harness.install`` (Claude Code, Codex and mini-swe-agent by
scripts/setup.d/57-agents.sh; never from a test: without them these tests skip, saying so). The model is
``ScriptedModel`` (a test double of a vLLM server: a tool call that runs the task's
command, then an answer) behind the real capture proxy;
the agent reaches it only through its own session's endpoint. The file the command
writes is checked in the session's workdir, the task's verifier scores the run, and the
capture session holds every model call the agent made, linked as one path.
"""

from __future__ import annotations

import json
import textwrap

import httpx
import pytest
from terminal_env import SubmitAction, TerminalEnv

from openenv.capture import CaptureServer, export_session, to_training_trace
from openenv.harness._agents import AGENTS, PORT, run_agent, run_with_endpoint
from openenv.harness._scripted import ScriptedModel, decode

from .conftest import AGENTS_DIR, BWRAP_WHY, TASK

pytestmark = pytest.mark.skipif(bool(BWRAP_WHY), reason=f"agents run under bubblewrap only: {BWRAP_WHY}")


@pytest.mark.parametrize("name", list(AGENTS))
async def test_agent_runs_the_task_in_the_session_sandbox_and_every_call_is_captured(
    name: str, model: ScriptedModel, capture: CaptureServer
) -> None:
    why = AGENTS[name].missing(AGENTS_DIR)
    if why:
        pytest.skip(f"{why}: run openenv.harness.install({name!r}) once")
    env = TerminalEnv(pool_size=0)
    try:
        obs = await env.reset(options={"task_id": TASK})
        box = env.session_sandbox
        assert box is not None
        assert not (box.workdir / "errors.txt").exists()
        expected = sum("ERROR" in line for line in (box.workdir / "app.log").read_text().splitlines())
        session = capture.registry.create(agent=name)
        before = len(model.calls)
        run = await run_agent(
            box, name, obs.instruction, capture, session.session_id, root=AGENTS_DIR, timeout_s=90
        )
        assert run.exit_code == 0, run.stderr[-2000:] or run.stdout[-2000:]
        # the command ran in this session's sandbox: its file is in the session's workdir
        assert (box.workdir / "errors.txt").read_text().strip() == str(expected)
        # every model call the agent made reached the backend through its session, and is in the trace
        made = model.calls[before:]
        assert run.calls == len(made) >= 2
        assert len(session.graph) == run.calls
        assert session.upstream_errors == 0
        # the agent's conversation links as one path (OpenCode adds a toolless title call: auxiliary)
        doc = export_session(session)
        agent_paths = [p for p in doc["sequences"] if p["role"] == "agent"]
        assert len(agent_paths) == 1
        assert all(p["role"] == "auxiliary" for p in doc["sequences"] if p is not agent_paths[0])
        ran = [c for c in made if any(m.get("role") == "tool" for m in c["messages"])]
        assert ran, "no call carried the command's result back"
        trace = to_training_trace(session.graph, doc)
        assert len(trace.turns) == agent_paths[0]["n_turns"]  # token-exact: ids and a logprob per id
        assert "grep -c ERROR" in decode(trace.turns[0].completion_token_ids)
        assert all(len(t.per_token_logps) == len(t.completion_token_ids) for t in trace.turns)
        verdict = await env.step(SubmitAction())
        assert verdict.done
        assert verdict.reward == 1.0
    finally:
        await env.close()


_PROBE = textwrap.dedent(
    """
    import json, socket, urllib.request, urllib.error, sys
    base = "http://127.0.0.1:INNER_PORT"
    out = {}
    def call(path, data=None, key="someone-else"):
        req = urllib.request.Request(base + path, data=data, headers={"authorization": "Bearer " + key,
                                     "content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, None
    out["sessions"] = call("/sessions")[0]
    out["health"] = call("/health")[0]
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    out["chat"] = call("/v1/chat/completions", body)[1]["choices"][0]["message"]["content"]
    for name, addr in (("host_proxy", ("127.0.0.1", int(sys.argv[1]))), ("outside", ("1.1.1.1", 80))):
        try:
            socket.create_connection(addr, timeout=3).close()
            out[name] = "connected"
        except OSError as exc:
            out[name] = type(exc).__name__
    print(json.dumps(out))
    """
).replace("INNER_PORT", str(PORT))


async def test_the_sandbox_reaches_only_its_own_session(capture: CaptureServer) -> None:
    """A process in the sandbox: the session routes refused, another session's key still its
    own session, the host's proxy port and the outside unreachable."""
    mine, other = capture.registry.create(), capture.registry.create()
    env = TerminalEnv(pool_size=0)
    try:
        await env.reset(options={"free_shell": True})
        box = env.session_sandbox
        assert box is not None
        argv = ["/usr/bin/python3", "-I", "-c", _PROBE, str(capture.port)]
        run = await run_with_endpoint(box, argv, capture, mine.session_id, timeout_s=60)
        assert run.exit_code == 0, run.stderr
        seen = json.loads(run.stdout)
        assert seen["sessions"] == 404
        assert seen["health"] == 404
        assert seen["chat"].startswith("THOUGHT")  # answered by the model...
        assert len(mine.graph) == 1
        assert len(other.graph) == 0
        assert seen["host_proxy"] == "ConnectionRefusedError"  # its loopback is its own
        assert seen["outside"] in ("OSError", "TimeoutError", "ConnectionRefusedError")
        assert sorted(run.refused) == ["GET /health", "GET /sessions"]
        # and the proxy's own session routes still need the admin key on the host
        async with httpx.AsyncClient(timeout=10) as client:
            assert (await client.get(capture.url + "/sessions")).status_code == 401
    finally:
        await env.close()
