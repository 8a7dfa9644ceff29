#!/usr/bin/env bash
# setup.d: train
# TRL for the TRL bridge (openenv.train.trl_environment / TrlRollout, part of openenv[train]),
# installed against the trainer's torch (never replacing it). Idempotent; after 40-train.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
if .venv/bin/python -c 'import trl' 2>/dev/null; then
  exit 0
fi
echo "setup: installing trl into .venv (keeps torch 2.13.0)"
flock .venv/.pip.lock .venv/bin/python -m pip install -q --disable-pip-version-check \
  "trl>=1.16,<2" "torch==2.13.0"
