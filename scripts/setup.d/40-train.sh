#!/usr/bin/env bash
# setup.d: train
# The GRPO trainer's extra (openenv[train]: torch CPU wheel, torchmonarch, transformers). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
if .venv/bin/python -c 'import torch, monarch.actor, transformers' 2>/dev/null; then
  exit 0
fi
echo "setup: installing the train extra (torch, torchmonarch, transformers) into .venv"
flock .venv/.pip.lock .venv/bin/python -m pip install -q --disable-pip-version-check \
  "torch==2.13.0" "torchmonarch==0.7.0" "transformers>=4.56"
