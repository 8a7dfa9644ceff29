#!/usr/bin/env bash
# setup.d: test
# Claude Code (npm @anthropic-ai/claude-code) and Codex CLI (npm @openai/codex) under
# openenv.harness.agents_dir() (/opt/openenv/agents as root), for tests/harness and
# docs/agents.md: real agent CLIs run in a terminal env session's sandbox against the
# capture proxy. About 10 s each and 235 + 150 MB the first time; nothing when there. Without npm it says so and the tests
# skip, naming the reason. mini-swe-agent (PyPI, about 80 s) is not installed here:
# `python -c 'from openenv.harness import install; install("mini-swe-agent")'`.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v npm >/dev/null 2>&1 || { echo "setup: npm is missing: no agent CLIs installed (tests/harness skip)"; exit 0; }
.venv/bin/python - <<'PY'
from openenv.harness import AGENTS, install

for name in ("claude-code", "codex"):
    if AGENTS[name].missing():
        print(f"setup: installing {name} for the agent tests ({install(name):.0f} s)")
PY
