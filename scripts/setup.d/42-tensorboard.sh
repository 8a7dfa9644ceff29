#!/usr/bin/env bash
# setup.d: train
# TensorBoard for the trainer's event files (DIR/tb/; part of openenv[train]). Idempotent;
# after 40-train.sh (torch.utils.tensorboard needs torch).
set -euo pipefail
cd "$(dirname "$0")/../.."
if .venv/bin/python -c 'import tensorboard' 2>/dev/null; then
  exit 0
fi
echo "setup: installing tensorboard into .venv (keeps torch 2.13.0)"
flock .venv/.pip.lock .venv/bin/python -m pip install -q --disable-pip-version-check \
  "tensorboard>=2.16" "torch==2.13.0"
