#!/usr/bin/env bash
# coding_env: its sandboxed workers need an interpreter every sandbox uid can run. A
# venv on a pyenv Python under /root (mode 700) is out of their reach, so they use
# Debian's /usr/bin/python3 (stdlib only). Idempotent; as root with apt, else says what to do.
set -euo pipefail
[ -x /usr/bin/python3 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing python3 with apt (coding_env's sandboxed workers)"
  export DEBIAN_FRONTEND=noninteractive
  flock /tmp/apt.lock apt-get install -y -qq python3 >/dev/null 2>&1 || {
    flock /tmp/apt.lock apt-get update -qq
    flock /tmp/apt.lock apt-get install -y -qq python3 >/dev/null
  }
else
  echo "setup: /usr/bin/python3 is missing; coding_env workers need it (or pass --env-kwargs python=...)" >&2
fi
