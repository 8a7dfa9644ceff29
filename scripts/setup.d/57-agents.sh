#!/usr/bin/env bash
# setup.d: test
# Claude Code (npm @anthropic-ai/claude-code) under openenv.harness.agents_dir()
# (/opt/openenv/agents as root), for tests/harness and docs/agents.md: a real agent CLI
# run in a terminal env session's sandbox against the capture proxy. About 10 s and
# 235 MB the first time; nothing when it is there. Without npm it says so and the tests
# skip, naming the reason. mini-swe-agent (PyPI, about 80 s) is not installed here:
# `python -c 'from openenv.harness import install; install("mini-swe-agent")'`.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v npm >/dev/null 2>&1 || { echo "setup: npm is missing: Claude Code not installed (tests/harness skip)"; exit 0; }
.venv/bin/python - <<'PY'
from openenv.harness import AGENTS, install

if AGENTS["claude-code"].missing():
    print(f"setup: installing Claude Code for the agent tests ({install('claude-code'):.0f} s)")
PY
