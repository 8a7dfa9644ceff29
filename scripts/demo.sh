#!/usr/bin/env bash
# Set up .venv with what serving and driving envs needs (openenv[standard]: server,
# clients, the shipped envs, authoring, mcp, gym, docker, hub; not the training stack),
# serve the echo env on a free loopback port, drive one episode, stop the server. It makes
# nothing else: the test fixtures (setup.d parts marked "test") are scripts/test.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
OPENENV_EXTRAS=${OPENENV_EXTRAS:-standard} bash scripts/setup.sh
port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "demo: serving envs/echo_env on http://127.0.0.1:$port"
.venv/bin/openenv serve envs/echo_env --port "$port" --log-level warning &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
.venv/bin/python examples/echo_episode.py --url "http://127.0.0.1:$port" --wait 30
echo "demo: done. Next: docs/quickstart.md; training: OPENENV_EXTRAS=all bash scripts/setup.sh"
