"""``/harness`` on an env server (``openenv serve``'s app, its ``openenv.endpoints``): mounted
for an env with a harness config, absent for any other; the terminal env's runs Claude
Code (installed by scripts/setup.d/57-agents.sh, else skipped with the reason) on a task,
its model the scripted backend behind a capture proxy the server starts and stops."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from terminal_env import TerminalEnv

from openenv.harness import AGENTS, HarnessConfig, HarnessEnvironment, InImage, ScriptedModel, _served
from tests._terminal_image import terminal_image

from .conftest import AGENTS_DIR, BWRAP_WHY, TASK
from .test_harness_env import _Echo


class EchoHarness(HarnessEnvironment):
    """An env that is a harness (upstream's way): each connection gets one."""

    def __init__(self) -> None:
        super().__init__(_Echo(HarnessConfig(name="echo", command=["echo"])))


async def _frames_to_turn_complete(ws: Any, limit: int = 200) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    for _ in range(limit):
        frames.append(json.loads(await ws.recv()))
        if frames[-1]["type"] in ("turn_complete", "error"):
            break
    return frames


async def test_a_harness_environment_is_served_on_harness(serve: Callable[..., Any]) -> None:
    server = serve(EchoHarness)
    async with websockets.connect(server.ws_url.replace("/ws", "/harness")) as ws:
        started = json.loads(await ws.recv())
        assert started["type"] == "session_started"
        assert started["data"]["harness"] == "echo"
        await ws.send(json.dumps({"type": "message", "content": "hi"}))
        frames = await _frames_to_turn_complete(ws)
        assert [f["type"] for f in frames] == ["text_output", "turn_complete"]
        assert frames[-1]["data"]["response"] == "echo: hi"


async def test_an_env_without_a_harness_config_has_no_harness_route(serve: Callable[..., Any]) -> None:
    server = serve()
    with pytest.raises(websockets.InvalidStatus):
        async with websockets.connect(server.ws_url.replace("/ws", "/harness")):
            pass


async def test_the_terminal_env_says_what_its_harness_lacks(
    serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(_served.LLM_URL_VAR, raising=False)
    server = serve(TerminalEnv, env_kwargs={"pool_size": 0})
    url = server.ws_url.replace("/ws", "/harness")
    for query, said in [
        ("?task_id=count-errors", _served.LLM_URL_VAR),
        ("?agent=claude-code", "task_id"),
        ("?task=count-errors", "unknown /harness option 'task'"),
    ]:
        async with websockets.connect(url + query) as ws:
            frame = json.loads(await ws.recv())
            assert frame["type"] == "error"
            assert said in frame["data"]["message"]


async def test_claude_code_on_a_terminal_task_over_the_servers_harness_route(
    serve: Callable[..., Any], model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    if BWRAP_WHY:
        pytest.skip(f"agents run under bubblewrap only: {BWRAP_WHY}")
    why = AGENTS["claude-code"].missing(AGENTS_DIR)
    if why:
        pytest.skip(f"{why}: run scripts/setup.d/57-agents.sh once")
    monkeypatch.setenv(_served.LLM_URL_VAR, model.url + "/v1")
    monkeypatch.setenv("OPENENV_AGENTS_DIR", str(AGENTS_DIR))
    server = serve(TerminalEnv, env_kwargs={"pool_size": 0})
    before = len(model.calls)
    url = server.ws_url.replace("/ws", "/harness") + f"?agent=claude-code&task_id={TASK}"
    async with websockets.connect(url) as ws:
        assert json.loads(await ws.recv())["data"]["harness"] == "claude-code"
        await ws.send(json.dumps({"type": "message", "content": "Count the ERROR lines of app.log."}))
        frames = await _frames_to_turn_complete(ws)
    assert frames[-1]["type"] == "turn_complete", frames[-1]
    assert frames[-1]["data"]["response"] == "Done."
    # the task's verifier scored the run in the session's sandbox, as in the image (issue 31)
    assert (frames[-1]["data"]["reward"], frames[-1]["data"]["done"]) == (1.0, True)
    breakdown = frames[-1]["data"]["reward_breakdown"]
    assert (breakdown["reward"], breakdown["tests_passed"]) == (1.0, breakdown["tests_total"])
    calls = [f for f in frames if f["type"] == "tool_call"]
    assert calls[0]["data"]["tool_name"] == "Bash"
    assert "grep -c ERROR" in calls[0]["data"]["arguments"]["command"]
    assert len(model.calls) - before == sum(f["type"] == "llm_response" for f in frames) >= 2
    assert _served._capture is not None  # the server's proxy, until the server stops
    server.stop()
    assert _served._capture is None


async def test_the_terminal_envs_harness_runs_agents_in_the_image_its_setting_names(
    serve: Callable[..., Any], model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OPENENV_HARNESS_IMAGE`` gives each connection the image placement (the server's env
    kwargs stay its /ws env's); an image that is not there is refused at reset, in one line."""
    image = f"openenv-h7-no-such-image:{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(_served.LLM_URL_VAR, model.url + "/v1")
    monkeypatch.setenv(_served.IMAGE_VAR, image)
    harness = _served.terminal_harness({"agent": "claude-code", "task_id": TASK}, {"pool_size": 0})
    assert harness.adapter.image == InImage(image, TASK)
    assert harness.terminal is None  # no host terminal env made from the server's kwargs
    await harness.close()
    monkeypatch.setenv("OPENENV_AGENTS_DIR", str(AGENTS_DIR))
    server = serve(TerminalEnv, env_kwargs={"pool_size": 0})
    url = server.ws_url.replace("/ws", "/harness") + f"?agent=claude-code&task_id={TASK}"
    async with websockets.connect(url) as ws:
        frame = json.loads(await ws.recv())
    assert frame["type"] == "error", frame
    message = frame["data"]["message"]
    assert "\n" not in message
    why = AGENTS["claude-code"].missing(AGENTS_DIR)
    assert (why or image) in message  # no agent is said first; else the image (or the engine) is
    server.stop()


@pytest.mark.docker
@pytest.mark.timeout(400)  # the image's build, when this test is the run's first to need it
async def test_claude_code_in_the_image_over_the_terminal_servers_harness_route(
    serve: Callable[..., Any], model: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``openenv serve terminal_env`` with ``OPENENV_HARNESS_IMAGE``: one turn told the task's
    own instruction runs Claude Code in a container of the image, and ``turn_complete``
    carries the verifier's reward from inside it (about 3 s, once the image is built: by
    this test when it runs first, shared with envs/terminal_env's docker tests)."""
    why = AGENTS["claude-code"].missing(AGENTS_DIR)
    if why:
        pytest.skip(why)
    image = terminal_image()  # skips only without a Docker engine
    monkeypatch.setenv(_served.LLM_URL_VAR, model.url + "/v1")
    monkeypatch.setenv(_served.IMAGE_VAR, image)
    monkeypatch.setenv("OPENENV_AGENTS_DIR", str(AGENTS_DIR))
    server = serve(TerminalEnv, env_kwargs={"pool_size": 0})
    before = len(model.calls)
    url = server.ws_url.replace("/ws", "/harness") + f"?agent=claude-code&task_id={TASK}"
    async with websockets.connect(url) as ws:
        assert json.loads(await ws.recv())["type"] == "session_started"
        await ws.send(json.dumps({"type": "message", "content": "{instruction}"}))  # the task's own
        frames = await _frames_to_turn_complete(ws)
    last = frames[-1]
    assert last["type"] == "turn_complete", last
    assert (last["data"]["reward"], last["data"]["done"]) == (1.0, True)
    assert last["data"]["reward_breakdown"]["tests_passed"] == 1
    assert "contain `ERROR`" in json.dumps(model.calls[before]["messages"])  # the instruction, in the image
    assert len(model.calls) - before == sum(f["type"] == "llm_response" for f in frames) >= 2
    server.stop()
