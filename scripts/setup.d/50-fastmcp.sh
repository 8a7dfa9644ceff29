#!/usr/bin/env bash
# setup.d: test
# fastmcp in .venv: upstream OpenEnv's MCP envs define their tools with fastmcp.FastMCP,
# so tests/core serves such an env (tests/core/upstream_envs/tools_env) unchanged. It is
# about 25 packages, so it is a test-only install here, not part of the dev extra.
# Idempotent; the tests that need it skip, saying why, when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
want="fastmcp>=3,<5"
if .venv/bin/python -c 'import fastmcp' 2>/dev/null; then
  exit 0
fi
echo "setup: installing $want into .venv (upstream-style MCP env tests)"
log=$(mktemp)
if ! flock .venv/.pip.lock .venv/bin/python -m pip install -q --disable-pip-version-check "$want" >"$log" 2>&1; then
  cat "$log" >&2; rm -f "$log"; echo "setup: installing $want failed" >&2; exit 1
fi
rm -f "$log"
