#!/usr/bin/env bash
# setup.d: test
# Claude Code (npm @anthropic-ai/claude-code), Codex CLI (npm @openai/codex) and
# mini-swe-agent (PyPI) under openenv.harness.agents_dir() (/opt/openenv/agents as root),
# for tests/harness and docs/agents.md: real agent CLIs run in a terminal env session's
# sandbox against the capture proxy. The first time: about 10 s and 235 MB, 10 s and
# 150 MB, and for mini-swe-agent 210 MB in 20-50 s (61 pinned wheels without resolution,
# then one import compiles what a run uses: openenv/harness/_mini_install.py); nothing when
# there. Without npm (or the system python3) it says so and those tests skip, naming the reason.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python - <<'PY'
from openenv.harness import AGENTS, install

for name in ("claude-code", "codex", "mini-swe-agent"):
    why = AGENTS[name].missing()
    if why and "not installed" not in why:
        print(f"setup: {why}: {name} not installed (its tests skip)")
    elif why:
        print(f"setup: installing {name} for the agent tests ({install(name):.0f} s)")
PY
