#!/usr/bin/env bash
# setup.d: test
# setup.d: apart
# .venv-mcp1: the mcp 1.x SDK in a venv of its own, so tests/mcp can drive our /mcp and
# `openenv mcp` with a 1.x `initialize` client too (the project itself uses mcp 2.x).
# Idempotent; the tests skip, saying why, when this venv is missing. Runs beside the other
# parts and the main install (apart: it needs nothing of .venv and writes only .venv-mcp1),
# so its pip takes no lock.
set -euo pipefail
cd "$(dirname "$0")/../.."
want="mcp>=1.25,<2"
if [ -x .venv-mcp1/bin/python ] && .venv-mcp1/bin/python -c 'import mcp.client.streamable_http' 2>/dev/null; then
  exit 0
fi
echo "setup: creating .venv-mcp1 ($want) for the MCP 1.x client tests"
python3 -m venv .venv-mcp1
log=$(mktemp)
if ! .venv-mcp1/bin/python -m pip install -q --disable-pip-version-check "$want" >"$log" 2>&1; then
  cat "$log" >&2; rm -f "$log"; echo "setup: installing $want into .venv-mcp1 failed" >&2; exit 1
fi
rm -f "$log"
