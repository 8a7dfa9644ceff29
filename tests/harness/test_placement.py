"""Where a ``CLIAgentAdapter`` runs its agent (a sandbox or ``InImage``), and the options
``run_agent`` and ``run_agent_in_image`` share (``AgentOptions``): what each refuses, saying
why, before any sandbox or container starts. The runs themselves: test_harness_env.py (a
sandbox) and envs/terminal_env/tests/test_terminal_docker_agents.py (the image)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from openenv.capture import CaptureServer
from openenv.harness import (
    CLIAgentAdapter,
    HarnessConfig,
    HarnessEnvironment,
    HarnessStartupError,
    InImage,
    run_agent,
    run_agent_in_image,
    terminal_task_env,
)


def _fake_agent(root: Path, relative: str) -> None:
    """An executable where an agent's program would be installed under ``root``."""
    exe = root / relative
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)


async def _no_box() -> None:
    raise AssertionError("no sandbox is made")


def test_an_adapter_runs_in_a_sandbox_or_an_image_one_of_them(capture: CaptureServer) -> None:
    config = HarnessConfig(name="claude-code", command=["claude"])
    with pytest.raises(HarnessStartupError, match="say where the agent runs"):
        CLIAgentAdapter(config, capture=capture)
    with pytest.raises(HarnessStartupError, match="say where the agent runs"):
        CLIAgentAdapter(config, capture=capture, sandbox=_no_box, image=InImage("img", "count-errors"))


def test_a_terminal_task_in_an_image_takes_no_terminal_options(capture: CaptureServer) -> None:
    with pytest.raises(HarnessStartupError, match="the image's own: it takes no pool_size"):
        terminal_task_env("claude-code", "count-errors", capture, image="openenv-terminal", pool_size=0)


async def test_an_agent_that_needs_node_is_refused_at_reset_in_an_image(
    capture: CaptureServer, tmp_path: Path
) -> None:
    """Gemini CLI is a Node.js program, which a terminal env image has not: the reset
    says so, and no capture session is made for it."""
    if shutil.which("npm") is None:
        pytest.skip("gemini-cli's AgentCLI needs npm on PATH to count as installed")
    _fake_agent(tmp_path, "gemini-cli/node_modules/.bin/gemini")
    config = HarnessConfig(name="gemini-cli", command=["gemini"])
    adapter = CLIAgentAdapter(
        config, capture=capture, image=InImage("openenv-terminal", "count-errors"), root=tmp_path
    )
    sessions = len(capture.registry.list_ids())
    with pytest.raises(HarnessStartupError, match=r"starts through Node\.js"):
        await HarnessEnvironment(adapter).reset()
    assert not await adapter.is_alive()
    assert len(capture.registry.list_ids()) == sessions


@pytest.mark.parametrize("runner", ["sandbox", "image"])
async def test_both_runners_refuse_an_option_they_do_not_take(
    runner: str, capture: CaptureServer, tmp_path: Path
) -> None:
    """The options are typed once (``AgentOptions``); a misspelt one is a TypeError, as a
    keyword parameter's would be, before anything runs."""
    _fake_agent(tmp_path, "mini-swe-agent/bin/mini")
    options: dict[str, Any] = {"root": tmp_path, "modle": "x"}
    if runner == "sandbox":
        run = run_agent(None, "mini-swe-agent", "hi", capture, "unused", **options)
    else:
        run = run_agent_in_image("openenv-terminal", "mini-swe-agent", "t", capture, "unused", **options)
    with pytest.raises(TypeError, match="unknown agent run option 'modle'"):
        await run
