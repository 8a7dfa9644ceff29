#!/usr/bin/env bash
# setup.d: test
# A third-party env package from PyPI written against upstream OpenEnv, for
# tests/interop/test_pypi_env.py: openenv-dipg-safety (med_safety_gym), installed
# WITHOUT its dependencies (they name upstream's openenv-core, which would replace
# ours) into .cache/pypi-envs/dipg, beside sqlalchemy (the one dependency it imports
# that our dev install lacks). The test puts that folder on the server's PYTHONPATH.
# Idempotent. Not apart: it runs .venv's pip, which the main install upgrades; it writes
# only that folder, so its pip takes no lock.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.cache/pypi-envs/dipg
want="openenv-dipg-safety==0.1.67"
if [ -f "$dest/.done" ]; then
  exit 0
fi
echo "setup: installing $want (no dependencies) into $dest"
rm -rf "$dest"
mkdir -p "$dest"
log=$(mktemp)
if ! .venv/bin/python -m pip install -q --disable-pip-version-check \
    --no-deps --target "$dest" "$want" "sqlalchemy>=2,<3" "greenlet>=3" >"$log" 2>&1; then
  cat "$log" >&2; rm -f "$log"; echo "setup: installing $want failed" >&2; exit 1
fi
rm -f "$log"
touch "$dest/.done"
