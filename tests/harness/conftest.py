"""Fixtures: a scripted chat backend (``ScriptedModel``, a test double of a vLLM server)
and the real capture proxy in front of it (session routes behind an admin key)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openenv.capture import CaptureServer
from openenv.harness import ScriptedModel, agents_dir
from openenv.sandbox._bwrap import bwrap_works
from openenv.server import serve_in_background

#: Where the agent CLIs are installed (scripts/setup.d/57-agents.sh puts Claude Code, Codex
#: and mini-swe-agent there).
AGENTS_DIR = agents_dir()
TASK, COMMAND = "count-errors", "grep -c ERROR app.log > errors.txt"
BWRAP_WHY = bwrap_works(190_000 + 4096)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    scripted = ScriptedModel(COMMAND)
    with serve_in_background(scripted.app) as running:
        scripted.url = running.url
        yield scripted


@pytest.fixture(scope="module")
def capture(model: ScriptedModel) -> Iterator[CaptureServer]:
    with CaptureServer(llm_url=model.url + "/v1", port=0, admin_key="admin-only") as server:
        yield server
