#!/usr/bin/env bash
# bubblewrap for openenv.sandbox (namespaces: no network, read-only system, own PID
# namespace). Idempotent; as root on Debian 12 with apt, otherwise says what to do.
set -euo pipefail
command -v bwrap >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing bubblewrap with apt"
  export DEBIAN_FRONTEND=noninteractive
  flock /tmp/apt.lock apt-get install -y -qq bubblewrap >/dev/null 2>&1 || {
    flock /tmp/apt.lock apt-get update -qq
    flock /tmp/apt.lock apt-get install -y -qq bubblewrap >/dev/null
  }
else
  echo "setup: bubblewrap (bwrap) is missing; the sandbox falls back to rlimits only" >&2
fi
